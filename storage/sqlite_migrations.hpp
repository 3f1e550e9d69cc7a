#pragma once
// The SQLite schema, as ordered migration steps (database.hpp applies them by user_version).
// Append only: a released step never changes.

#include <span>
#include <string_view>

namespace kernelscan {

std::span<const std::string_view> sqlite_migrations();

}  // namespace kernelscan
