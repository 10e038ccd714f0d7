#!/usr/bin/env bash
# Fetches Apache Kafka's jars from Maven Central with Maven, from the pinned
# poms beside this script:
#
#   tools/peers/kafka/pom.xml              -> build/peers/kafka-4.4.0/
#       the broker, its storage tool, kafka-tools, kafka-clients 4.4.0, log4j
#   tools/peers/kafka-clients-3.9/pom.xml  -> build/peers/kafka-clients-3.9.1/
#       kafka-clients 3.9.1 + Jackson, for the versions Kafka 4.0 removed
#
# Idempotent and offline when done: a folder whose stamp (.complete) holds the
# hash of its pom and whose listed jars are all there is left alone, and Maven
# is not even started.  A changed pom fetches that set again.
#
# Maven's local repository is build/peers/m2 (so the project writes nothing
# outside its tree, and a fresh clone needs only Maven Central); set
# KAFKAPROTO_MAVEN_REPO to share one between clones.
#
# Needs: bash, mvn (3.8+), Java 17, Maven Central on the first run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PEERS="$ROOT/build/peers"
M2="${KAFKAPROTO_MAVEN_REPO:-$PEERS/m2}"
MVN="${MVN:-mvn}"
# Invoked by coordinates, so Maven resolves no plugin prefix (a network look-up).
COPY_GOAL="org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"

# pom (relative to this script) and the folder (under build/peers) it fills
SETS=(
    "kafka/pom.xml kafka-4.4.0"
    "kafka-clients-3.9/pom.xml kafka-clients-3.9.1"
)

log() { printf 'fetch_kafka: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$PEERS"
# Serialise concurrent runs (several pytest processes, make peers).
if command -v flock >/dev/null 2>&1; then
    exec 8>"$PEERS/.fetch_kafka.lock"
    flock 8
fi

hash_of() { sha256sum "$1" | cut -d' ' -f1; }

ready() {  # ready DEST POM_HASH
    local dest="$1" want="$2" jar
    [[ -f "$dest/.complete" && -f "$dest/.jars" ]] || return 1
    [[ "$(cat "$dest/.complete")" == "$want" ]] || return 1
    while IFS= read -r jar; do
        [[ -s "$dest/$jar" ]] || return 1
    done <"$dest/.jars"
}

fetch() {  # fetch POM DEST POM_HASH
    local pom="$1" dest="$2" want="$3" tmp started
    command -v "$MVN" >/dev/null 2>&1 || die "mvn not found (install Maven 3.8+, or set MVN)"
    tmp="$(mktemp -d "$PEERS/.fetch.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    started=$SECONDS
    log "fetching $(basename "$dest") with Maven (pom: ${pom#"$ROOT"/})"
    local args=(-B -q -Dstyle.color=never -Dmaven.repo.local="$M2" -f "$pom" "$COPY_GOAL"
                -DoutputDirectory="$tmp/jars" -DincludeScope=runtime)
    # Offline first: Maven's local repository may hold everything already.
    if ! "$MVN" -o "${args[@]}" >"$tmp/mvn.log" 2>&1; then
        rm -rf "$tmp/jars"
        "$MVN" "${args[@]}" >"$tmp/mvn.log" 2>&1 || { cat "$tmp/mvn.log" >&2; die "mvn failed for $pom"; }
    fi
    (cd "$tmp/jars" && ls -1 -- *.jar) >"$tmp/jars/.jars" || die "Maven copied no jars for $pom"
    printf '%s\n' "$want" >"$tmp/jars/.complete"
    chmod 755 "$tmp/jars"
    rm -rf "$dest"
    mv "$tmp/jars" "$dest"
    rm -rf "$tmp"
    trap - EXIT
    log "$(basename "$dest"): $(wc -l <"$dest/.jars") jars in $((SECONDS - started)) s"
}

for set in "${SETS[@]}"; do
    read -r pom_rel dest_rel <<<"$set"
    pom="$HERE/$pom_rel"
    dest="$PEERS/$dest_rel"
    [[ -f "$pom" ]] || die "missing $pom"
    want="$(hash_of "$pom")"
    if ! ready "$dest" "$want"; then
        fetch "$pom" "$dest" "$want"
    fi
done
log "ready (build/peers/kafka-4.4.0, build/peers/kafka-clients-3.9.1)"
