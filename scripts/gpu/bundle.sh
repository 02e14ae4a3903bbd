#!/usr/bin/env bash
# Makes gpu-bundle/ (ignored by git): what a bare GPU machine needs, beside
# this tree, to run scripts/gpu/device-check.sh. That machine has CUDA,
# NCCL (torch's), Python with torch, a C++ compiler, cmake and ninja, but
# none of Debian's packages and no network (docs/gpu.md, "The device
# check"). The bundle holds:
#   build/        hvdrun, tests/gpu/nccl_gpu_test and the raw-Gloo benchmark,
#                 prebuilt here, without debug information, where
#                 HVD_BUILD_DIR=gpu-bundle/build finds them
#   lib/          the shared libraries they load that are not the C and C++
#                 runtimes (Gloo, spdlog, fmt, yaml-cpp, cpp-httplib, ...)
#   ext/          the extension's objects to build there against that
#                 machine's Python: hvd's static libraries, the extension's
#                 compile flags and link inputs (ext/flags.sh)
#   include/      the headers of Debian packages the extension's sources
#                 include, read off the compiler's dependency lists
#   pybind11/     Debian's pybind11 headers, for a machine whose Python has
#                 no pybind11 of its own (its own, if any, is preferred)
#   MANIFEST      the sources' hash, which device-check.sh compares with the
#                 tree it runs in, and what came from where
# Prints the bundle's size and, with the tree that travels with it, fails
# above the device tool's 64 MiB.
#
#   scripts/gpu/bundle.sh
# Environment: HVD_BUILD_DIR (default build/, which scripts/setup.sh builds
# first if it has not been configured); it must have NCCL (HVD_WITH_NCCL).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
source "$hvd_root/scripts/gpu/sources_hash.sh"

limit_bytes=$((64 * 1024 * 1024))
build="${HVD_BUILD_DIR:-$hvd_root/build}"
bundle="$hvd_root/gpu-bundle"
[ -f "$build/CMakeCache.txt" ] ||
  "$hvd_root/scripts/setup.sh" --with-tests --with-benchmarks

# The build's artefacts this bundle carries, by target and by path.
targets=(hvdrun nccl_gpu_test hvd_gloo_allreduce_bench _hvd_core)
programs=(launcher/hvdrun tests/gpu/nccl_gpu_test
          scripts/bench/allreduce/hvd_gloo_allreduce_bench)
ext_sources=(module arrays errors)
# The C and C++ runtimes: the GPU machine has its own, as new or newer.
system_libs='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so'
# Headers that come with the machine's compiler, C library, kernel and
# Python rather than with hvd's dependencies.
system_header_pkgs='^(libc6-dev|linux-libc-dev|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev|libpython3[.0-9]*-dev|python3[.0-9]*-dev|pybind11-dev)$'

# tests/gpu is a folder of the build only where it found NCCL.
[ -d "$build/tests/gpu" ] ||
  hvd_die "$build has no GPU tests: configure it with the tests" \
    "(scripts/setup.sh --with-tests), the CUDA toolkit and NCCL 2.27 or newer" \
    "(HVD_WITH_NCCL, docs/gpu.md)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  hvd_die "building ${targets[*]} in $build failed"
fi

rm -rf "$bundle"
mkdir -p "$bundle/build/python" "$bundle/lib" "$bundle/ext" "$bundle/include"

for p in "${programs[@]}"; do
  mkdir -p "$bundle/build/$(dirname "$p")"
  strip --strip-debug -o "$bundle/build/$p" "$build/$p"
done

# The extension: its objects are built there (that machine's Python), the
# rest of hvd comes as the static libraries of this build, and the shared
# libraries by soname from lib/.
# The link command, as either generator keeps it: Make in link.txt (paths
# from build/python), Ninja in its build log (paths from build/).
ext_dir="$build/python/CMakeFiles/_hvd_core.dir"
if [ -f "$ext_dir/link.txt" ]; then
  link_command="$(cat "$ext_dir/link.txt")"
  link_base="$build/python"
else
  ext_so="$(cd "$build" && ls python/_hvd_core*.so)"
  link_command="$(ninja -C "$build" -t commands "$ext_so" | tail -n 1)"
  link_base="$build"
fi
link_inputs=()
for word in $link_command; do
  case "$word" in
    *.a)
      strip --strip-debug -o "$bundle/ext/$(basename "$word")" "$link_base/$word"
      link_inputs+=("ext/$(basename "$word")") ;;
    /*.so*)
      soname="$(objdump -p "$word" | awk '$1 == "SONAME" { print $2 }')"
      link_inputs+=("lib/$soname") ;;
    -l*) link_inputs+=("$word") ;;
  esac
done
# The compile command's macros and options, without its include folders
# (the tree's are named again relative to the root, the system's come from
# include/ and the machine's Python).
# (One for all its sources, each alone or in a unity unit.)
command="$("${HVD_PYTHON:-/usr/bin/python3}" - "$build/compile_commands.json" <<'EOF'
import json, sys
for entry in json.load(open(sys.argv[1])):
    if "/_hvd_core.dir/" in entry["command"]:
        print(entry["command"])
        break
EOF
)"
[ -n "$command" ] || hvd_die "no compile command of _hvd_core in $build"
defines=()
for word in $command; do
  case "$word" in
    -D*|-std=*|-fvisibility=*) defines+=("$word") ;;
  esac
done
{
  echo "# Written by scripts/gpu/bundle.sh: the extension's build inputs,"
  echo "# paths relative to the repository's root."
  echo "ext_sources=(${ext_sources[*]})"
  echo "ext_flags=(${defines[*]} -Iruntime/include -Icommon/include" \
    "-Irendezvous/include -Igpu-bundle/include)"
  echo "ext_link=(${link_inputs[*]})"
} >"$bundle/ext/flags.sh"

# Shared libraries: what the programs and the extension load, less the C
# and C++ runtimes. (dpkg is asked once per list: each call reads its whole
# database.)
mapfile -t libs < <(for f in "${programs[@]/#/$build/}" "$build"/python/_hvd_core*.so; do
  ldd "$f" | awk '$3 ~ /^\// { print $1 " " $3 }'
done | sort -u | grep -Ev "^$system_libs")
reals=()
for entry in "${libs[@]}"; do
  soname="${entry%% *}"
  cp -L "${entry#* }" "$bundle/lib/$soname"
  reals+=("$(readlink -f "${entry#* }")")
done
# dpkg knows a file by the path its package installed (/usr/lib or /lib).
{ dpkg -S "${reals[@]}" "${reals[@]#/usr}" 2>/dev/null || true; } >"$log"
for i in "${!libs[@]}"; do
  pkg="$(awk -v a="${reals[$i]}" -v b="${reals[$i]#/usr}" \
    '$2 == a || $2 == b { split($1, p, ":"); print p[1]; exit }' "$log")"
  echo "lib/${libs[$i]%% *} ${pkg:-?}"
done >"$bundle/MANIFEST.libs"

# Headers: every file under /usr/include the extension's sources read, less
# the compiler's, the C library's, the kernel's and Python's.
# The compiler lists them (-M), given the compile command's flags.
includes=()
for word in $command; do
  case "$word" in
    -I*) includes+=("$word") ;;
  esac
done
mapfile -t headers < <(for s in "${ext_sources[@]}"; do
  "${command%% *}" -M "${defines[@]}" "${includes[@]}" \
    $(python3-config --includes) "$hvd_root/python/src/$s.cc"
done | sed -e 's/\\$//' -e 's/^[^:]*://' | tr ' ' '\n' |
  grep '^/usr/include/' | sort -u)
{ dpkg -S "${headers[@]}" 2>/dev/null || true; } >"$log"
awk '{ split($1, p, /[:,]/); print p[1], $NF }' "$log" | while read -r pkg header; do
  [[ "$pkg" =~ $system_header_pkgs ]] && continue
  mkdir -p "$bundle/include/$(dirname "${header#/usr/include/}")"
  cp "$header" "$bundle/include/${header#/usr/include/}"
  echo "$pkg"
done | sort | uniq -c | awk '{ print "include: " $2 " (" $1 " headers)" }' \
  >"$bundle/MANIFEST.include"

mkdir -p "$bundle/pybind11"
cp -r /usr/include/pybind11 "$bundle/pybind11/"
echo "pybind11/: pybind11-dev $(dpkg-query -W -f='${Version}' pybind11-dev)" \
  >>"$bundle/MANIFEST.include"

{
  echo "sources: $(hvd_sources_hash "$hvd_root")"
  echo "built: $(date -Is) from $(git -C "$hvd_root" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "compiler: $(c++ --version | head -n1)"
  cat "$bundle/MANIFEST.libs" "$bundle/MANIFEST.include"
} >"$bundle/MANIFEST"
rm "$bundle/MANIFEST.libs" "$bundle/MANIFEST.include"

# What travels: the tree (tracked files and untracked ones git does not
# ignore) and the bundle.
tree_bytes="$(cd "$hvd_root" && git ls-files -z --cached --others --exclude-standard |
  xargs -0 stat -c %s 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')"
bundle_bytes="$(du -sb "$bundle" | cut -f1)"
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "gpu-bundle: $(mib "$bundle_bytes") ($(ls "$bundle/lib" | wc -l) libraries);" \
  "with the tree: $(mib $((tree_bytes + bundle_bytes))) of $(mib "$limit_bytes")"
if [ $((tree_bytes + bundle_bytes)) -gt "$limit_bytes" ]; then
  hvd_die "the tree and gpu-bundle/ together are over the device tool's 64 MiB"
fi
