#!/usr/bin/env bash
# Installs and builds (scripts/setup.sh), then runs every test. Ends with the
# test runner's summary line; exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$hvd_root/scripts/setup.sh"

# Layering the linker cannot check (docs/design.md, "Components"): the
# rendezvous server side and the launcher never include Gloo or the runtime.
if grep -rnE '#include [<"](gloo/|hvd/runtime)' "$hvd_root/launcher" \
     "$hvd_root/rendezvous/src/server.cc" "$hvd_root/rendezvous/src/kv_store.cc" \
     "$hvd_root/rendezvous/src/routes_kv.cc" \
     "$hvd_root/rendezvous/include/hvd/rendezvous/server.h" \
     "$hvd_root/rendezvous/include/hvd/rendezvous/kv_store.h"; then
  hvd_die "the launcher and the rendezvous server must not depend on Gloo or the runtime"
fi
if grep -rnE '#include .*launcher' "$hvd_root/runtime"; then
  hvd_die "the runtime must not include launcher code"
fi

(cd "$hvd_root/build" && ctest --output-on-failure -j"$(nproc)" --timeout 300)

# End-to-end tests through the real hvdrun, with Debian's Python.
cd "$hvd_root"
/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration
