#!/usr/bin/env bash
# Makes sure RabbitMQ (127.0.0.1:5672) and Redis (127.0.0.1:6379) are up,
# installing and starting them from Debian packages when they are not, and
# that both servers are installed, and bubblewrap for the sandbox tests.
# Usage: scripts/services.sh up
set -euo pipefail

port_open() { (echo > "/dev/tcp/127.0.0.1/$1") >/dev/null 2>&1; }

need_install=()
# The binaries even when the shared services run elsewhere: the chaos test
# and the reconnection tests start servers of their own to restart.
command -v rabbitmq-server >/dev/null 2>&1 || need_install+=(rabbitmq-server)
command -v redis-server >/dev/null 2>&1 || need_install+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_install+=(redis-tools)
# `execute`'s sandbox; its tests fail under CI=true without it.
command -v bwrap >/dev/null 2>&1 || need_install+=(bubblewrap)
if [ ${#need_install[@]} -gt 0 ]; then
  echo "installing ${need_install[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_install[@]}" >/dev/null
fi

if ! port_open 6379; then
  dir=$(mktemp -d)
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save '' --appendonly no \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
  for _ in $(seq 100); do port_open 6379 && break; sleep 0.1; done
fi

if ! port_open 5672; then
  dir=$(mktemp -d); chmod 755 "$dir"
  cat > "$dir/rabbitmq.conf" <<'CONF'
listeners.tcp.default = 127.0.0.1:5672
management.tcp.ip = 127.0.0.1
prometheus.tcp.ip = 127.0.0.1
CONF
  echo '[rabbitmq_prometheus].' > "$dir/enabled_plugins"
  chown rabbitmq "$dir/enabled_plugins" 2>/dev/null || true
  export ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  rabbitmq-server -detached
  for _ in $(seq 240); do rabbitmq-diagnostics -q ping >/dev/null 2>&1 && break; sleep 0.5; done
  rabbitmqctl -q await_startup --timeout 120
fi

port_open 6379 || { echo "Redis did not start" >&2; exit 1; }
port_open 5672 || { echo "RabbitMQ did not start" >&2; exit 1; }
echo "RabbitMQ and Redis are up" >&2
