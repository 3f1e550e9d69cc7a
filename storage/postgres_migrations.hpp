#pragma once
// The PostgreSQL schema, as ordered migration steps, all in the schema `kernelscan` (so that the
// store can share a database with other applications). postgres_job_store applies them in
// order, each in a transaction under an advisory lock, so that daemons starting together
// migrate once. Append only: a released step never changes.

#include <span>
#include <string_view>

namespace kernelscan {

std::span<const std::string_view> postgres_migrations();

}  // namespace kernelscan
