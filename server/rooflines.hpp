#pragma once
// Each device's measured roofline (DESIGN.md §5), kept in the store so that a restarted daemon
// judges by it instead of measuring again. A roofline belongs to a device of a node: in a fleet
// the key names the node too, so that two nodes' "device 0" keep their own.
//
// Threading: not thread-safe; the scheduler uses it on its io thread.

#include <optional>
#include <string>

#include "engine/device_info.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class rooflines {
 public:
  // `node`: empty for a store one daemon uses alone (SQLite), else this node's name.
  rooflines(job_store& store, std::string node) : m_store(store), m_node(std::move(node)) {}

  // Names a device's roofline: another node, part, driver or slot is measured anew.
  std::string key(const device_info& d) const;
  // The stored roofline; nullopt when there is none, it does not read, or the store cannot be
  // reached (each logged): measure it.
  std::optional<measured_roofline> load(const device_info& d);
  // Stores a measured roofline; false (logged) when the store cannot take it.
  bool save(const device_info& d, const measured_roofline& r);

 private:
  job_store& m_store;
  std::string m_node;
};

}  // namespace kernelscan
