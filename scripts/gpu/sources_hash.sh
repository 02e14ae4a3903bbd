# Sourced by scripts/gpu/bundle.sh and device-check.sh.
# hvd_sources_hash ROOT: one hash of the C++ sources and build files that
# the bundle's programs and libraries are made from. bundle.sh records it;
# device-check.sh compares it with the tree it runs in, so that a bundle
# made from other sources is refused rather than tested.
hvd_sources_hash() {
  (cd "$1" &&
    find CMakeLists.txt cmake common rendezvous notify launcher runtime \
      python/src tests scripts/bench -path tests/browser/node_modules -prune \
      -o -type f \( -name '*.cc' -o -name '*.h' -o -name CMakeLists.txt \
      -o -name '*.cmake' \) -print | LC_ALL=C sort |
    xargs -d '\n' sha1sum | sha1sum | cut -c1-16)
}
