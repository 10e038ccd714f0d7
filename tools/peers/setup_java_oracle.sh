#!/usr/bin/env bash
# Builds the Java test oracle (tests/oracle/KafkaOracle.java) twice, against
# Kafka's own client library in two releases:
#
#   4.4.0  every (message, version) of Kafka 4.4's schemas
#   3.9.1  the versions Kafka 4.0 removed (KIP-896), which 4.4 no longer reads
#
# and, against 4.4.0, Kafka's Java clients as peers (tests/peers/java/: a
# scenario of the admin client, producers and consumers, and a metrics
# reporter that makes a broker take client telemetry) into
# build/peers/clients-4.4.0/classes.
#
# The jars come from Maven Central through tools/peers/fetch_kafka.sh (pinned
# poms).  The source is written against 4.4.0; the 3.9.1 build compiles a copy
# whose imports name the packages 3.9 had (4.x moved the record classes to
# ...common.record.internal and AppInfoParser to ...common.utils.internals).
#
# Idempotent: when the jars are there and each build's source hash matches,
# it does nothing (no Maven, no javac).
#
# Needs: bash, mvn, javac (Java 17; $JAVA_HOME is honoured), Maven Central on
# the first run.
#
# Layout produced (repo-relative):
#   build/peers/oracle-<version>/classes/            compiled KafkaOracle classes
#   build/peers/oracle-<version>/classes/.source-sha256
#   build/peers/oracle-<version>/classpath.txt       entries, relative to build/peers
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PEERS="$ROOT/build/peers"
SOURCE="$ROOT/tests/oracle/KafkaOracle.java"

# oracle version and the build/peers folder holding its jars
BUILDS=(
    "4.4.0 kafka-4.4.0"
    "3.9.1 kafka-clients-3.9.1"
)

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/javac" ]]; then
    JAVAC="$JAVA_HOME/bin/javac"
else
    JAVAC="javac"
fi

log() { printf 'setup_java_oracle: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ -f "$SOURCE" ]] || die "missing $SOURCE"
bash "$HERE/fetch_kafka.sh"

mkdir -p "$PEERS"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$PEERS/.setup.lock"
    flock 9
fi

# The oracle's build before the Maven jars (a PyPI wheel's 3.9.1 jar).
rm -rf "$PEERS/jars" "$PEERS/oracle-classes" "$PEERS/classpath.txt"

# The source as the given release compiles it.
source_for() {
    if [[ "$1" == 3.* ]]; then
        sed -E -e 's/^import org\.apache\.kafka\.common\.record\.internal\./import org.apache.kafka.common.record./' \
               -e 's/^import org\.apache\.kafka\.common\.utils\.internals\.AppInfoParser;/import org.apache.kafka.common.utils.AppInfoParser;/' \
               "$SOURCE"
    else
        cat "$SOURCE"
    fi
}

for build in "${BUILDS[@]}"; do
    read -r version jars <<<"$build"
    out="$PEERS/oracle-$version"
    jar_dir="$PEERS/$jars"
    mkdir -p "$out"
    hash="$( (source_for "$version"; cat "$jar_dir/.complete") | sha256sum | cut -d' ' -f1)"
    if [[ ! -f "$out/classes/KafkaOracle.class" || ! -f "$out/classes/.source-sha256" \
          || "$(cat "$out/classes/.source-sha256")" != "$hash" ]]; then
        command -v "$JAVAC" >/dev/null 2>&1 || die "javac not found (install a JDK 17 or set JAVA_HOME)"
        tmp="$(mktemp -d "$out/.build.XXXXXX")"
        trap 'rm -rf "$tmp"' EXIT
        mkdir -p "$tmp/src" "$tmp/classes"
        source_for "$version" >"$tmp/src/KafkaOracle.java"
        log "compiling KafkaOracle.java against kafka-clients $version"
        "$JAVAC" -encoding UTF-8 -nowarn -d "$tmp/classes" -cp "$jar_dir/*" "$tmp/src/KafkaOracle.java" \
            || die "javac failed against kafka-clients $version"
        printf '%s\n' "$hash" >"$tmp/classes/.source-sha256"
        chmod 755 "$tmp/classes"
        rm -rf "$out/classes"
        mv "$tmp/classes" "$out/classes"
        rm -rf "$tmp"
        trap - EXIT
    fi
    # Classpath entries relative to build/peers, one per line, classes first.
    {
        printf '%s\n' "oracle-$version/classes"
        sed -e "s|^|$jars/|" "$jar_dir/.jars"
    } >"$out/classpath.txt.tmp"
    mv "$out/classpath.txt.tmp" "$out/classpath.txt"
done

# Kafka's Java clients as peers: every source of tests/peers/java, against 4.4.0.
clients_out="$PEERS/clients-4.4.0"
clients_hash="$( (cat "$ROOT"/tests/peers/java/*.java; cat "$PEERS/kafka-4.4.0/.complete") | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$clients_out/classes/.source-sha256" || "$(cat "$clients_out/classes/.source-sha256")" != "$clients_hash" ]]; then
    command -v "$JAVAC" >/dev/null 2>&1 || die "javac not found (install a JDK 17 or set JAVA_HOME)"
    mkdir -p "$clients_out"
    tmp="$(mktemp -d "$clients_out/.build.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    log "compiling tests/peers/java against kafka-clients 4.4.0"
    "$JAVAC" -encoding UTF-8 -nowarn -d "$tmp" -cp "$PEERS/kafka-4.4.0/*" "$ROOT"/tests/peers/java/*.java \
        || die "javac failed on tests/peers/java"
    printf '%s\n' "$clients_hash" >"$tmp/.source-sha256"
    chmod 755 "$tmp"
    rm -rf "$clients_out/classes"
    mv "$tmp" "$clients_out/classes"
    trap - EXIT
fi

log "ready (build/peers/oracle-4.4.0, build/peers/oracle-3.9.1, build/peers/clients-4.4.0)"
