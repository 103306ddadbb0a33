#!/usr/bin/env bash
# Hooklane's local test stack without Docker: an SQS-compatible server (fauxqs,
# npm), a MongoDB-compatible server (FerretDB on SQLite, built from
# localstack/ferretdb) and RabbitMQ (Debian's rabbitmq-server, installed with
# apt-get when missing), all on loopback.
#
# Usage: localstack/stack.sh start|stop|status|env
#
#   start   install/build what is missing, start both servers in the background
#           and wait until they answer; a server already running is left alone,
#           and a server on the port that this script did not start (another
#           checkout's stack, a real LocalStack or MongoDB) is used as it is
#   stop    stop the servers this script started (by their recorded PIDs only)
#   status  print the state of each server; exit 0 only when both are running
#   env     print the export lines the integration tests read (endpoints of
#           the shared servers, and the FerretDB binary and fauxqs server
#           script the fault tests start private servers from)
#
# Environment:
#   HOOKLANE_STACK_SQS_PORT    SQS port (default 4566)
#   HOOKLANE_STACK_MONGO_PORT  MongoDB port (default 27017)
#   HOOKLANE_STACK_AMQP_PORT   RabbitMQ AMQP port (default 5673; its Erlang
#                              distribution port is this plus 20000)
#   HOOKLANE_STACK_CACHE       cache dir for binaries, logs, PIDs, data
#                              (default localstack/.cache)
#   HOOKLANE_STACK_WAIT        seconds to wait for readiness (default 60)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sqs_port="${HOOKLANE_STACK_SQS_PORT:-4566}"
mongo_port="${HOOKLANE_STACK_MONGO_PORT:-27017}"
amqp_port="${HOOKLANE_STACK_AMQP_PORT:-5673}"
cache="${HOOKLANE_STACK_CACHE:-$here/.cache}"
wait_seconds="${HOOKLANE_STACK_WAIT:-60}"
run_dir="$cache/run"
bin_dir="$cache/bin"
mongo_data="$cache/mongo-data"
ferretdb_bin="$bin_dir/ferretdb"
rabbit_server=/usr/lib/rabbitmq/bin/rabbitmq-server
rabbit_node=hooklane-stack@localhost

log() { printf 'stack: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# pid_of NAME prints the recorded PID of NAME when that process is still the
# one this script started (alive, and its command line carries our marker).
pid_of() {
	local name="$1" pidfile="$run_dir/$1.pid" pid
	[[ -f "$pidfile" ]] || return 1
	pid="$(<"$pidfile")"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	# Guard against PID reuse: the command line must still be ours.
	local cmdline marker
	cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
	case "$name" in
	sqs) marker="$here/sqs/server.mjs" ;;
	mongo) marker="$ferretdb_bin" ;;
	rabbit) marker="$rabbit_server" ;;
	*) return 1 ;;
	esac
	[[ "$cmdline" == *"$marker"* ]] || return 1
	printf '%s\n' "$pid"
}

port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

hash_files() {
	cat "$@" | sha256sum | cut -d' ' -f1
}

ensure_node() {
	command -v node >/dev/null || die "node is required (Node 20 or newer)"
	command -v npm >/dev/null || die "npm is required"
	local major
	major="$(node -p 'process.versions.node.split(".")[0]')"
	((major >= 20)) || die "node $(node --version) is too old: fauxqs 1.9.2 needs Node 20 or newer"
}

# install_sqs runs npm ci in localstack/sqs unless node_modules already
# matches the committed package-lock.json.
install_sqs() {
	ensure_node
	local want marker="$here/sqs/node_modules/.hooklane-lock.sha256"
	want="$(hash_files "$here/sqs/package-lock.json")-node$(node -p 'process.versions.node.split(".")[0]')"
	if [[ -f "$marker" && "$(<"$marker")" == "$want" ]]; then
		return 0
	fi
	log "installing fauxqs (npm ci in localstack/sqs)"
	(cd "$here/sqs" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2) ||
		die "npm ci in $here/sqs failed"
	printf '%s\n' "$want" >"$marker"
}

# build_ferretdb builds the FerretDB binary into the cache unless it is
# already built from the current sources with the current Go.
build_ferretdb() {
	command -v go >/dev/null || die "go is required to build FerretDB"
	local want marker="$bin_dir/ferretdb.sha256"
	want="$(hash_files "$here/ferretdb/go.mod" "$here/ferretdb/go.sum" "$here/ferretdb/main.go" "$here/ferretdb/patch.sh")-$(go env GOVERSION)"
	if [[ -x "$ferretdb_bin" && -f "$marker" && "$(<"$marker")" == "$want" ]]; then
		return 0
	fi
	log "building FerretDB into $ferretdb_bin (first time takes about a minute)"
	mkdir -p "$bin_dir"
	# FerretDB's module first, then a patched copy of it (patch.sh says
	# why: lookups by _id that missed the _id index).
	(cd "$here/ferretdb" && GOFLAGS=-mod=readonly go mod download github.com/FerretDB/FerretDB) ||
		die "go mod download of FerretDB failed"
	bash "$here/ferretdb/patch.sh" "$cache/ferretdb-patched" || die "patching FerretDB failed"
	(cd "$here/ferretdb" && GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath \
		-modfile "$cache/ferretdb-patched/go.mod" -o "$ferretdb_bin.tmp" .) ||
		die "go build of localstack/ferretdb failed"
	mv "$ferretdb_bin.tmp" "$ferretdb_bin"
	printf '%s\n' "$want" >"$marker"
}

# sqs_ready makes a real SQS request (ListQueues, AWS JSON protocol), which
# fauxqs, LocalStack and SQS-compatible servers alike answer.
sqs_ready() {
	node -e '
		fetch(process.argv[1], {
			method: "POST",
			headers: {
				"Content-Type": "application/x-amz-json-1.0",
				"X-Amz-Target": "AmazonSQS.ListQueues",
			},
			body: "{}",
			signal: AbortSignal.timeout(2000),
		}).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1));
	' "http://127.0.0.1:$sqs_port/"
}

mongo_ready() {
	port_open "$mongo_port"
}

rabbit_ready() {
	port_open "$amqp_port"
}

# install_rabbit installs Debian's rabbitmq-server when it is missing (as
# scripts/install-chromium.sh installs chromium); the package's own service
# is not used.
install_rabbit() {
	[[ -x "$rabbit_server" ]] && return 0
	command -v apt-get >/dev/null || die "rabbitmq-server is missing and apt-get is not here: install Debian's rabbitmq-server"
	local sudo=""
	if [[ "$(id -u)" -ne 0 ]]; then
		command -v sudo >/dev/null || die "rabbitmq-server is missing: not root and no sudo to install it"
		sudo=sudo
	fi
	log "installing rabbitmq-server (apt-get)"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rabbitmq-server >&2 ||
		die "apt-get install rabbitmq-server failed"
	[[ -x "$rabbit_server" ]] || die "rabbitmq-server installed, but $rabbit_server is missing"
}

# wait_ready NAME CHECK waits until CHECK succeeds, the process dies, or the
# deadline passes; on failure it prints the log tail.
wait_ready() {
	local name="$1" check="$2" deadline=$((SECONDS + wait_seconds)) pid
	pid="$(<"$run_dir/$name.pid")"
	while ((SECONDS < deadline)); do
		# Liveness by PID only: right after the fork the command line is
		# still this script's until the exec, so pid_of would misfire.
		if ! kill -0 "$pid" 2>/dev/null; then
			log "$name exited during start-up; last log lines:"
			tail -n 40 "$run_dir/$name.log" >&2 || true
			return 1
		fi
		if "$check"; then
			return 0
		fi
		sleep 0.2
	done
	log "$name not ready after ${wait_seconds}s; last log lines:"
	tail -n 40 "$run_dir/$name.log" >&2 || true
	return 1
}

# launch NAME PORT CMD... starts CMD in the background with its PID recorded.
launch() {
	local name="$1" port="$2"
	shift 2
	mkdir -p "$run_dir"
	# setsid: the server must outlive the shell (and its process group) that
	# ran `start`, e.g. a Makefile recipe.
	setsid nohup "$@" >"$run_dir/$name.log" 2>&1 </dev/null &
	printf '%s\n' "$!" >"$run_dir/$name.pid"
}

start_sqs() {
	local pid
	# Installed even when a server already runs: tests start private
	# fauxqs servers of their own from it (HOOKLANE_TEST_FAUXQS_SERVER).
	install_sqs
	if pid="$(pid_of sqs)"; then
		log "sqs already running (pid $pid) on 127.0.0.1:$(<"$run_dir/sqs.port")"
		return 0
	fi
	if port_open "$sqs_port"; then
		# Another checkout's stack, or a real LocalStack: use it as it is.
		sqs_ready || die "port $sqs_port is in use but does not answer SQS requests; set HOOKLANE_STACK_SQS_PORT"
		log "sqs: a server this script did not start already answers on 127.0.0.1:$sqs_port; using it"
		return 0
	fi
	launch sqs "$sqs_port" env HOOKLANE_STACK_SQS_HOST=127.0.0.1 HOOKLANE_STACK_SQS_PORT="$sqs_port" \
		node "$here/sqs/server.mjs"
	printf '%s\n' "$sqs_port" >"$run_dir/sqs.port"
	wait_ready sqs sqs_ready || {
		stop_one sqs
		return 1
	}
	log "sqs (fauxqs) ready on http://127.0.0.1:$sqs_port"
}

start_mongo() {
	local pid
	# Built even when a server already runs: tests start private FerretDB
	# servers of their own from it (HOOKLANE_TEST_FERRETDB_BIN).
	build_ferretdb
	if pid="$(pid_of mongo)"; then
		log "mongo already running (pid $pid) on 127.0.0.1:$(<"$run_dir/mongo.port")"
		return 0
	fi
	if port_open "$mongo_port"; then
		# Another checkout's stack, or a real MongoDB: use it as it is.
		log "mongo: a server this script did not start already listens on 127.0.0.1:$mongo_port; using it"
		return 0
	fi
	# Every start begins with empty databases.
	rm -rf "$mongo_data"
	mkdir -p "$mongo_data"
	launch mongo "$mongo_port" "$ferretdb_bin" -listen "127.0.0.1:$mongo_port" -data-dir "$mongo_data" -log-level warn
	printf '%s\n' "$mongo_port" >"$run_dir/mongo.port"
	wait_ready mongo mongo_ready || {
		stop_one mongo
		return 1
	}
	log "mongo (FerretDB) ready on mongodb://127.0.0.1:$mongo_port/"
}

start_rabbit() {
	local pid base="$cache/rabbitmq"
	install_rabbit
	if pid="$(pid_of rabbit)"; then
		log "rabbit already running (pid $pid) on 127.0.0.1:$(<"$run_dir/rabbit.port")"
		return 0
	fi
	if port_open "$amqp_port"; then
		log "rabbit: a server this script did not start already listens on 127.0.0.1:$amqp_port; using it"
		return 0
	fi
	# Every start begins with an empty broker. The node, its Erlang
	# distribution and epmd listen on loopback only.
	rm -rf "$base"
	mkdir -p "$base"
	printf '[].\n' >"$base/enabled_plugins.erl"
	launch rabbit "$amqp_port" env ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_NODENAME="$rabbit_node" \
		RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$amqp_port" RABBITMQ_DIST_PORT="$((amqp_port + 20000))" \
		RABBITMQ_MNESIA_BASE="$base/mnesia" RABBITMQ_LOG_BASE="$base/log" RABBITMQ_LOGS=- \
		RABBITMQ_ENABLED_PLUGINS_FILE="$base/enabled_plugins.erl" RABBITMQ_CONFIG_FILE="$base/rabbitmq" \
		"$rabbit_server"
	printf '%s\n' "$amqp_port" >"$run_dir/rabbit.port"
	wait_ready rabbit rabbit_ready || {
		stop_one rabbit
		return 1
	}
	log "rabbit (RabbitMQ) ready on amqp://127.0.0.1:$amqp_port/"
}

# stop_one NAME stops the process recorded for NAME, if it is still ours.
stop_one() {
	local name="$1" pid deadline
	if ! pid="$(pid_of "$name")"; then
		rm -f "$run_dir/$name.pid"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((SECONDS + 10))
	while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "$name (pid $pid) did not stop on SIGTERM; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$run_dir/$name.pid"
	log "$name stopped (pid $pid)"
}

status_one() {
	local name="$1" pid
	if pid="$(pid_of "$name")"; then
		printf '%s\trunning\tpid %s\tport %s\n' "$name" "$pid" "$(<"$run_dir/$name.port")"
		return 0
	fi
	local port
	case "$name" in
	sqs) port="$sqs_port" ;;
	rabbit) port="$amqp_port" ;;
	*) port="$mongo_port" ;;
	esac
	if port_open "$port"; then
		printf '%s\texternal\tport %s (not started by this script)\n' "$name" "$port"
		return 0
	fi
	printf '%s\tstopped\n' "$name"
	return 1
}

print_env() {
	local sp="$sqs_port" mp="$mongo_port" ap="$amqp_port"
	# Report the ports of running servers even when the caller's environment
	# no longer carries the overrides used at start.
	if pid_of sqs >/dev/null; then sp="$(<"$run_dir/sqs.port")"; fi
	if pid_of mongo >/dev/null; then mp="$(<"$run_dir/mongo.port")"; fi
	if pid_of rabbit >/dev/null; then ap="$(<"$run_dir/rabbit.port")"; fi
	printf 'export HOOKLANE_TEST_MONGO_URI=mongodb://127.0.0.1:%s/\n' "$mp"
	printf 'export HOOKLANE_TEST_SQS_ENDPOINT=http://127.0.0.1:%s\n' "$sp"
	printf 'export HOOKLANE_TEST_AMQP_URL=amqp://guest:guest@127.0.0.1:%s/\n' "$ap"
	# What the fault tests need to start PRIVATE servers they may stop:
	# the FerretDB binary (built by `start`) and the fauxqs wrapper (run
	# with node and HOOKLANE_STACK_SQS_PORT=<port>).
	printf 'export HOOKLANE_TEST_FERRETDB_BIN=%q\n' "$ferretdb_bin"
	printf 'export HOOKLANE_TEST_FAUXQS_SERVER=%q\n' "$here/sqs/server.mjs"
}

main() {
	case "${1:-}" in
	start)
		local t0=$SECONDS
		start_sqs
		start_mongo
		start_rabbit
		log "stack ready in $((SECONDS - t0))s"
		;;
	stop)
		stop_one sqs
		stop_one mongo
		stop_one rabbit
		;;
	status)
		local rc=0
		status_one sqs || rc=1
		status_one mongo || rc=1
		status_one rabbit || rc=1
		return "$rc"
		;;
	env) print_env ;;
	*)
		printf 'usage: %s start|stop|status|env\n' "$0" >&2
		return 2
		;;
	esac
}

main "$@"
