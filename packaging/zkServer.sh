#!/bin/sh
# zkServer.sh for zkgo: Apache ZooKeeper's server script, run with the zkgo
# binary instead of java. The commands, the configuration lookup, the pid
# file, the messages and the exit statuses are those of ZooKeeper 3.8's
# zkServer.sh and zkEnv.sh:
#
#   zkServer.sh [--config <conf-dir>] {start|start-foreground|stop|version|restart|status|print-cmd} [zoo.cfg]
#
#   ZOOCFGDIR    configuration directory (default: ../conf next to this
#                script, or else ../etc/zookeeper); --config sets it
#   ZOOCFG       configuration file name in ZOOCFGDIR (default zoo.cfg); the
#                optional argument after the command overrides it, a path
#                with a directory is used as it is
#   ZOO_LOG_DIR  where the server's output goes (default ../logs):
#                zookeeper-$USER-server-$HOSTNAME.out
#   ZOOPIDFILE   pid file (default: dataDir/zookeeper_server.pid)
#   ZKGO_BIN     the zkgo binary (default: zkgo next to this script, or
#                else on PATH)
#   ZKGO_CLIENT_FLAGS  zkgo's client TLS flags for status over
#                secureClientPort (e.g. -client-configuration client.properties)
#
# $ZOOCFGDIR/zookeeper-env.sh and $ZOOCFGDIR/java.env are sourced, as
# zkEnv.sh does; SERVER_JVMFLAGS and JVMFLAGS reach zkgo, which applies
# the -D system properties that have a ZooKeeper meaning (README, "Drop-in
# launch").

ZOOBIN=$(dirname "$0")
ZOOBINDIR=$(cd "$ZOOBIN" && pwd)
ZOOKEEPER_PREFIX="$ZOOBINDIR/.."

if [ $# -gt 1 ] && [ "--config" = "$1" ]; then
    shift
    ZOOCFGDIR=$1
    shift
fi

if [ -z "$ZOOCFGDIR" ]; then
    if [ -e "$ZOOKEEPER_PREFIX/conf" ]; then
        ZOOCFGDIR="$ZOOBINDIR/../conf"
    else
        ZOOCFGDIR="$ZOOBINDIR/../etc/zookeeper"
    fi
fi

if [ -f "$ZOOCFGDIR/zookeeper-env.sh" ]; then
    . "$ZOOCFGDIR/zookeeper-env.sh"
fi

case "${ZOOCFG:-zoo.cfg}" in
/*) ZOOCFG=${ZOOCFG} ;;
*) ZOOCFG="$ZOOCFGDIR/${ZOOCFG:-zoo.cfg}" ;;
esac

if [ -f "$ZOOCFGDIR/java.env" ]; then
    . "$ZOOCFGDIR/java.env"
fi

if [ -z "$ZOO_LOG_DIR" ]; then
    ZOO_LOG_DIR="$ZOOKEEPER_PREFIX/logs"
fi

if [ -n "$ZKGO_BIN" ]; then
    ZKGO=$ZKGO_BIN
elif [ -x "$ZOOBINDIR/zkgo" ]; then
    ZKGO="$ZOOBINDIR/zkgo"
elif command -v zkgo >/dev/null 2>&1; then
    ZKGO=$(command -v zkgo)
else
    echo "Error: ZKGO_BIN is not set and zkgo could not be found next to this script or in PATH." 1>&2
    exit 1
fi

if [ -n "$2" ]; then
    ZOOCFG="$ZOOCFGDIR/$2"
    # a path with a directory of its own is used as it is
    if [ "$(dirname "$ZOOCFG")" != "$ZOOCFGDIR" ]; then
        ZOOCFG="$2"
    fi
fi

echo "Using config: $ZOOCFG" >&2

# The last value of a zoo.cfg key, as the key=value line gives it.
cfgvalue() {
    grep "^[[:space:]]*$1" "$ZOOCFG" 2>/dev/null | sed -e 's/.*=//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | tail -n 1
}

ZOO_DATADIR=$(cfgvalue 'dataDir[[:space:]]*[=:]')

if [ -n "$ZOO_DATADIR_AUTOCREATE_DISABLE" ] && [ ! -d "$ZOO_DATADIR" ]; then
    echo "ZooKeeper data directory is missing at $ZOO_DATADIR fix the path or run initialize"
    exit 1
fi

if [ -z "$ZOOPIDFILE" ]; then
    if [ -n "$ZOO_DATADIR" ] && [ ! -d "$ZOO_DATADIR" ]; then
        mkdir -p "$ZOO_DATADIR"
    fi
    ZOOPIDFILE="$ZOO_DATADIR/zookeeper_server.pid"
else
    mkdir -p "$(dirname "$ZOOPIDFILE")"
fi

if [ ! -w "$ZOO_LOG_DIR" ]; then
    mkdir -p "$ZOO_LOG_DIR"
fi

_ZOO_USER=${USER:-$(id -un 2>/dev/null)}
_ZOO_HOST=${HOSTNAME:-$(hostname 2>/dev/null || uname -n)}
_ZOO_DAEMON_OUT="$ZOO_LOG_DIR/zookeeper-$_ZOO_USER-server-$_ZOO_HOST.out"

# zkgo reads SERVER_JVMFLAGS and JVMFLAGS from its environment (in that
# order, as zkServer.sh puts them on java's command line); java.env has been
# sourced above, so zkgo is told not to read it again.
export SERVER_JVMFLAGS JVMFLAGS

running() {
    [ -f "$ZOOPIDFILE" ] && kill -0 "$(cat "$ZOOPIDFILE")" >/dev/null 2>&1
}

start() {
    printf "Starting zookeeper ... "
    if running; then
        echo "zookeeper already running as process $(cat "$ZOOPIDFILE")."
        exit 1
    fi
    nohup "$ZKGO" server -java-env off "$ZOOCFG" >"$_ZOO_DAEMON_OUT" 2>&1 </dev/null &
    pid=$!
    if ! printf '%s' "$pid" >"$ZOOPIDFILE"; then
        echo FAILED TO WRITE PID
        exit 1
    fi
    sleep 1
    if kill -0 "$pid" >/dev/null 2>&1; then
        echo STARTED
    else
        echo FAILED TO START
        exit 1
    fi
}

stop() {
    printf "Stopping zookeeper ... "
    if [ ! -f "$ZOOPIDFILE" ]; then
        echo "no zookeeper to stop (could not find file $ZOOPIDFILE)"
    else
        pid=$(cat "$ZOOPIDFILE")
        kill "$pid"
        rm "$ZOOPIDFILE"
        # zkgo shuts down cleanly on SIGTERM; wait for it (ZooKeeper's
        # script sleeps one second), so that a start right after finds the
        # port free.
        i=0
        sleep 1
        while kill -0 "$pid" >/dev/null 2>&1 && [ $i -lt 30 ]; do
            sleep 1
            i=$((i + 1))
        done
        echo STOPPED
    fi
}

status() {
    isSSL="false"
    clientPortAddress=$(cfgvalue 'clientPortAddress[^[:alpha:]]')
    if [ -z "$clientPortAddress" ]; then
        clientPortAddress="localhost"
    fi
    clientPort=$(cfgvalue 'clientPort[^[:alpha:]]')
    case "$clientPort" in
    '' | *[!0-9]*)
        clientPort=""
        dataDir=$ZOO_DATADIR
        myid=$(head -n 1 "$dataDir/myid" 2>/dev/null | tr -d '[:space:]')
        case "$myid" in
        '' | *[!0-9]*)
            echo "myid could not be determined, will not able to locate clientPort in the server configs."
            ;;
        *)
            clientPortAndAddress=$(grep "^[[:space:]]*server.$myid=.*;.*" "$ZOOCFG" | sed -e 's/.*=//' -e 's/.*;//')
            if [ -z "$clientPortAndAddress" ]; then
                echo "Client port not found in static config file. Looking in dynamic config file."
                dynamicConfigFile=$(cfgvalue 'dynamicConfigFile')
                case "$dynamicConfigFile" in
                '' | /*) ;;
                *) dynamicConfigFile="$(dirname "$ZOOCFG")/$dynamicConfigFile" ;;
                esac
                clientPortAndAddress=$(grep "^[[:space:]]*server.$myid=.*;.*" "$dynamicConfigFile" 2>/dev/null | sed -e 's/.*=//' -e 's/.*;//')
            fi
            if [ -z "$clientPortAndAddress" ]; then
                echo "Client port not found in the server configs"
            else
                case "$clientPortAndAddress" in
                \[*\]:*) clientPortAddress=$(echo "$clientPortAndAddress" | sed -e 's|^\[||' -e 's|\]:.*||') ;;
                *:*) clientPortAddress=$(echo "$clientPortAndAddress" | sed -e 's/:.*//') ;;
                esac
                clientPort=$(echo "$clientPortAndAddress" | sed -e 's/.*://' | tr -d '[:space:]')
            fi
            ;;
        esac
        ;;
    esac
    if [ -z "$clientPort" ]; then
        echo "Client port not found. Looking for secureClientPort in the static config."
        secureClientPort=$(cfgvalue 'secureClientPort[^[:alpha:]]')
        if [ -n "$secureClientPort" ]; then
            isSSL="true"
            clientPort=$secureClientPort
            clientPortAddress=$(cfgvalue 'secureClientPortAddress[^[:alpha:]]')
            if [ -z "$clientPortAddress" ]; then
                clientPortAddress="localhost"
            fi
        else
            echo "Unable to find either secure or unsecure client port in any configs. Terminating."
            exit 1
        fi
    fi
    echo "Client port found: $clientPort. Client address: $clientPortAddress. Client SSL: $isSSL."
    case "$clientPortAddress" in
    *:*) hostport="[$clientPortAddress]:$clientPort" ;;
    *) hostport="$clientPortAddress:$clientPort" ;;
    esac
    flags=""
    if [ "$isSSL" = "true" ]; then
        flags=$ZKGO_CLIENT_FLAGS
    fi
    # shellcheck disable=SC2086 # the client flags are words
    STAT=$("$ZKGO" fourlw -server "$hostport" $flags srvr 2>/dev/null | grep Mode)
    if [ -z "$STAT" ]; then
        if [ "$isSSL" = "true" ]; then
            echo " "
            echo "Note: We used secureClientPort ($secureClientPort) to establish connection, but we failed. The 'status'"
            echo "  command establishes a client connection to the server to execute diagnostic commands. Please make sure you"
            echo "  provided the client TLS flags in the ZKGO_CLIENT_FLAGS environment variable! E.g.:"
            echo "  ZKGO_CLIENT_FLAGS=\"-client-configuration /etc/zookeeper/client.properties\" ./zkServer.sh status"
            echo " "
        fi
        echo "Error contacting service. It is probably not running."
        exit 1
    fi
    echo "$STAT"
    exit 0
}

case $1 in
start)
    start
    ;;
start-foreground)
    if [ -n "$ZOO_NOEXEC" ]; then
        "$ZKGO" server -java-env off "$ZOOCFG"
    else
        exec "$ZKGO" server -java-env off "$ZOOCFG"
    fi
    ;;
print-cmd)
    echo "SERVER_JVMFLAGS=\"$SERVER_JVMFLAGS\" JVMFLAGS=\"$JVMFLAGS\" \"$ZKGO\" server -java-env off \"$ZOOCFG\" > \"$_ZOO_DAEMON_OUT\" 2>&1 < /dev/null"
    ;;
stop)
    stop
    exit 0
    ;;
version)
    "$ZKGO" version 2>/dev/null
    ;;
restart)
    stop
    sleep 1
    start
    ;;
status)
    status
    ;;
*)
    echo "Usage: $0 [--config <conf-dir>] {start|start-foreground|stop|version|restart|status|print-cmd}" >&2
    ;;
esac
