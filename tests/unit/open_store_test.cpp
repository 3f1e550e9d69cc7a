#include "storage/open_store.hpp"

#include <gtest/gtest.h>

namespace kernelscan {
namespace {

TEST(OpenStore, PasswordsNeverReachALogLine) {
  EXPECT_EQ(redact_database_url("postgresql://ks:s3cret@db:5432/kernelscan"),
            "postgresql://ks:***@db:5432/kernelscan");
  EXPECT_EQ(redact_database_url("postgresql://ks:p@ss@db/k"), "postgresql://ks:***@db/k");
  EXPECT_EQ(redact_database_url("postgresql://ks@db/k?sslmode=require&password=x&a=b"),
            "postgresql://ks@db/k?sslmode=require&password=***&a=b");
  EXPECT_EQ(redact_database_url("postgres://db/k?sslpassword=key"),
            "postgres://db/k?sslpassword=***");
  EXPECT_EQ(redact_database_url("postgresql://ks@db/k"), "postgresql://ks@db/k");
  EXPECT_EQ(redact_database_url("postgresql:///k"), "postgresql:///k");
}

TEST(OpenStore, OnlyPostgresqlUrlsAreDatabases) {
  store_config config;
  config.database_url = "mysql://root:hunter2@db/k";
  try {
    open_store(config);
    FAIL() << "opened";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("postgresql://"), std::string::npos) << what;
    EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
  }
  config.database_url.clear();
  config.sqlite_path = ":memory:";
  EXPECT_EQ(open_store(config)->backend(), "sqlite");
}

}  // namespace
}  // namespace kernelscan
