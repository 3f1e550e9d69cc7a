#pragma once
// Carries events between the nodes of a fleet (DESIGN.md §7) through the store (PostgreSQL's
// LISTEN/NOTIFY): this daemon's "job" events go out as the job's id (a job, with its spec, can
// be larger than a notification may be) and its "points" events as they are; another node's
// job event is read back from the store and published here, and handed to `on_job` (so that a
// queued job wakes idle devices here, and a cancel reaches the node that runs the job). A
// request to measure a device's roofline again, made on any node, travels the same way to the
// node that has the device (`on_roofline`), and is not shown on the event stream. When the
// store had lost the other nodes for a while, a "reset" event tells this daemon's streams that
// they missed events (clients reload). So does another node's job event whose job cannot be
// read here (the store failing for a moment): the event is not lost on clients, and `on_unread`
// wakes whoever waits on that job to look again.
//
// Threading: attach() once at start-up, before the store joins; the rest runs on the hub's
// publishers' threads and the store's event thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server/event_hub.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class fleet_relay {
 public:
  using roofline_handler = std::function<void(const std::string& node, int index)>;
  using unread_handler = std::function<void(std::int64_t job_id)>;
  // Another live daemon took this node's name while the store was cut off (why, as text).
  using name_lost_handler = std::function<void(const std::string& why)>;

  fleet_relay(job_store& store, event_hub& hub, std::function<void(const job_record&)> on_job,
              roofline_handler on_roofline = {}, unread_handler on_unread = {},
              name_lost_handler on_name_lost = {})
      : m_store(store),
        m_hub(hub),
        m_on_job(std::move(on_job)),
        m_on_roofline(std::move(on_roofline)),
        m_on_unread(std::move(on_unread)),
        m_on_name_lost(std::move(on_name_lost)) {}

  void attach();
  // What another node announced: published on this daemon's hub.
  void received(const store_event& e);

  // The id of a "job" event's job: its JSON starts {"id":N (the job codec writes it first).
  static std::optional<std::int64_t> job_id_of(std::string_view job_json);

  // The event that asks node `node` to measure its device `index`'s roofline again.
  static store_event roofline_request(const std::string& node, int index);

 private:
  job_store& m_store;
  event_hub& m_hub;
  std::function<void(const job_record&)> m_on_job;
  roofline_handler m_on_roofline;
  unread_handler m_on_unread;
  name_lost_handler m_on_name_lost;
};

}  // namespace kernelscan
