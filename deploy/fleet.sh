#!/usr/bin/env bash
# A fleet on this machine, for trying one out: a throwaway PostgreSQL server and NODES daemons
# (default 3) with DEVICES mock devices each (default 2), all on one database, on loopback ports
# from PORT (default 8081). Any daemon's API and dashboard serve the whole fleet. Ctrl-C stops
# everything and removes the database.
#
#   deploy/fleet.sh                       # 3 nodes x 2 mock devices: http://127.0.0.1:8081..8083
#   NODES=4 DEVICES=8 PORT=9000 deploy/fleet.sh --mock-model H100-SXM
#
# Extra arguments go to every `kernelscan serve`. PostgreSQL refuses to run as root; as root the
# server runs as the postgres user that Debian's postgresql package creates.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing "${KERNELSCAN_PACKAGES[@]}" postgresql
install_web_packages
build_kernelscan "${KERNELSCAN_GPU:-off}" kernelscan

NODES="${NODES:-3}"
DEVICES="${DEVICES:-2}"
PORT="${PORT:-8081}"
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
DIR="$(mktemp -d /tmp/kernelscan-fleet-XXXXXX)"
PG_PORT="$((PORT + 1000))"
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$DIR"
  as_pg=(runuser -u postgres --)
fi

pids=()
stop_fleet() {
  trap - INT TERM EXIT
  echo "kernelscan: stopping the fleet"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  "${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$DIR/pg" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap 'stop_fleet; exit 130' INT TERM
trap stop_fleet EXIT

echo "kernelscan: PostgreSQL in $DIR on 127.0.0.1:$PG_PORT"
"${as_pg[@]}" "$PG_BIN/initdb" -D "$DIR/pg" -U kernelscan -A trust -E UTF8 >"$DIR/initdb.log"
"${as_pg[@]}" "$PG_BIN/pg_ctl" -D "$DIR/pg" -l "$DIR/postgres.log" -w \
  -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$DIR" start >/dev/null
DATABASE="postgresql://kernelscan@127.0.0.1:$PG_PORT/postgres"

for ((i = 0; i < NODES; i++)); do
  node="node-$((i + 1))"
  port="$((PORT + i))"
  "$KERNELSCAN_ROOT/build/server/kernelscan" serve --database "$DATABASE" --node "$node" \
    --listen "127.0.0.1:$port" --engine mock --mock-devices "$DEVICES" "$@" \
    >"$DIR/$node.log" 2>&1 &
  pids+=("$!")
  echo "kernelscan: $node on http://127.0.0.1:$port (log: $DIR/$node.log)"
done
echo "kernelscan: submit to any of them; GET /api/v1/devices lists all $((NODES * DEVICES)) devices"
echo "kernelscan: Ctrl-C stops the fleet"
wait -n "${pids[@]}" || true
echo "kernelscan: a daemon stopped; the ends of the logs:"
for ((i = 0; i < NODES; i++)); do tail -n 5 "$DIR/node-$((i + 1)).log"; done
