#!/usr/bin/env bash
# Builds the Java test oracle (tests/oracle/KafkaOracle.java) into build/peers/.
#
# The Kafka client library and the jars it needs at run time come from one
# PyPI wheel, shigawire-apache-flink-libraries, whose pyflink/lib/ folder
# holds kafka-clients.jar (Kafka 3.9.1), Jackson, slf4j-api and the
# compression codecs (lz4-java, snappy-java, zstd-jni).
#
# Idempotent: when the jars and compiled classes are already there and the
# source has not changed, it does nothing (no download, no javac).
#
# Needs: bash, python3 with pip (or $PYTHON), javac (Java 17; $JAVA_HOME is
# honoured), and access to PyPI on the first run.
#
# Layout produced (repo-relative):
#   build/peers/jars/*.jar            the runtime jars
#   build/peers/jars/.complete        stamp: wheel name==version it came from
#   build/peers/oracle-classes/       compiled KafkaOracle classes
#   build/peers/oracle-classes/.source-sha256   hash of the compiled source
#   build/peers/classpath.txt         classpath entries, relative to build/peers
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PEERS="$ROOT/build/peers"
JARS_DIR="$PEERS/jars"
CLASSES_DIR="$PEERS/oracle-classes"
SOURCE="$ROOT/tests/oracle/KafkaOracle.java"

WHEEL_NAME="shigawire-apache-flink-libraries"
WHEEL_VERSION="2.0.0.post1"
KAFKA_VERSION="3.9.1"
# Jars taken from pyflink/lib/ inside the wheel.
JARS=(kafka-clients jackson-databind jackson-core jackson-annotations slf4j-api lz4-java snappy-java zstd-jni)

PY="${PYTHON:-python3}"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/javac" ]]; then
    JAVAC="$JAVA_HOME/bin/javac"
else
    JAVAC="javac"
fi

log() { printf 'setup_java_oracle: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$PEERS"

# Serialise concurrent runs (e.g. several pytest workers starting at once).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$PEERS/.setup.lock"
    flock 9
fi

jars_ready() {
    [[ -f "$JARS_DIR/.complete" ]] || return 1
    [[ "$(cat "$JARS_DIR/.complete")" == "$WHEEL_NAME==$WHEEL_VERSION" ]] || return 1
    local j
    for j in "${JARS[@]}"; do
        [[ -s "$JARS_DIR/$j.jar" ]] || return 1
    done
}

fetch_jars() {
    command -v "$PY" >/dev/null 2>&1 || die "python interpreter '$PY' not found (set PYTHON)"
    local tmp
    tmp="$(mktemp -d "$PEERS/fetch.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    log "downloading $WHEEL_NAME==$WHEEL_VERSION from PyPI (about 90 MB)"
    "$PY" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check --quiet \
        -d "$tmp/wheel" "$WHEEL_NAME==$WHEEL_VERSION" \
        || die "pip download of $WHEEL_NAME==$WHEEL_VERSION failed"
    local wheel
    wheel="$(ls "$tmp"/wheel/*.whl 2>/dev/null | head -n 1)"
    [[ -n "$wheel" ]] || die "no wheel file was downloaded"
    log "extracting ${#JARS[@]} jars"
    "$PY" - "$wheel" "$tmp/jars" "$KAFKA_VERSION" "${JARS[@]}" <<'PYEOF'
import io
import os
import sys
import zipfile

wheel, dest, kafka_version, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
os.makedirs(dest, exist_ok=True)
with zipfile.ZipFile(wheel) as zf:
    for name in names:
        member = "pyflink/lib/%s.jar" % name
        try:
            data = zf.read(member)
        except KeyError:
            sys.exit("setup_java_oracle: error: %s is not in %s" % (member, os.path.basename(wheel)))
        with open(os.path.join(dest, name + ".jar"), "wb") as f:
            f.write(data)
with zipfile.ZipFile(os.path.join(dest, "kafka-clients.jar")) as kz:
    props = kz.read("kafka/kafka-version.properties").decode("utf-8", "replace")
found = dict(line.split("=", 1) for line in props.splitlines() if "=" in line).get("version", "?").strip()
if found != kafka_version:
    sys.exit("setup_java_oracle: error: kafka-clients.jar is version %s, expected %s" % (found, kafka_version))
PYEOF
    printf '%s\n' "$WHEEL_NAME==$WHEEL_VERSION" >"$tmp/jars/.complete"
    chmod 755 "$tmp/jars"
    rm -rf "$JARS_DIR"
    mv "$tmp/jars" "$JARS_DIR"
    rm -rf "$tmp"
    trap - EXIT
}

source_hash() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$SOURCE" | cut -d' ' -f1
    else
        "$PY" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$SOURCE"
    fi
}

classpath_jars() {
    local j cp=""
    for j in "${JARS[@]}"; do
        cp="${cp:+$cp:}$JARS_DIR/$j.jar"
    done
    printf '%s' "$cp"
}

compile_oracle() {
    command -v "$JAVAC" >/dev/null 2>&1 || die "javac not found (install a JDK 17 or set JAVA_HOME)"
    local tmp
    tmp="$(mktemp -d "$PEERS/classes.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    log "compiling KafkaOracle.java"
    "$JAVAC" -encoding UTF-8 -nowarn -d "$tmp" -cp "$(classpath_jars)" "$SOURCE" \
        || die "javac failed"
    printf '%s\n' "$1" >"$tmp/.source-sha256"
    chmod 755 "$tmp"
    rm -rf "$CLASSES_DIR"
    mv "$tmp" "$CLASSES_DIR"
    trap - EXIT
}

[[ -f "$SOURCE" ]] || die "missing $SOURCE"

if ! jars_ready; then
    fetch_jars
fi

hash="$(source_hash)"
if [[ ! -f "$CLASSES_DIR/KafkaOracle.class" || ! -f "$CLASSES_DIR/.source-sha256" \
      || "$(cat "$CLASSES_DIR/.source-sha256")" != "$hash" ]]; then
    compile_oracle "$hash"
fi

# Classpath entries relative to build/peers, one per line, classes first.
{
    printf '%s\n' "oracle-classes"
    for j in "${JARS[@]}"; do
        printf '%s\n' "jars/$j.jar"
    done
} >"$PEERS/classpath.txt.tmp"
mv "$PEERS/classpath.txt.tmp" "$PEERS/classpath.txt"

log "ready (build/peers)"
