# Shared by the scripts in scripts/: package installation and messages.
# Source it; do not run it.

hvd_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

hvd_die() {
  echo "error: $*" >&2
  exit 1
}

# hvd_ensure_packages PKG...: installs the Debian packages that are missing,
# with one 'apt-get update' first. Quiet when nothing is missing.
hvd_ensure_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || hvd_die "missing packages (${missing[*]}) and no sudo to install them as $(id -un)"
    sudo="sudo"
  fi
  echo "installing Debian packages: ${missing[*]}"
  local log
  log="$(mktemp)"
  # Installing starts no service: mariadb-server, munge and the Slurm
  # daemons start theirs from their maintainer scripts, through invoke-rc.d
  # or deb-systemd-invoke, which both ask /usr/sbin/policy-rc.d first. One
  # that denies every start (exit 101) is there while apt runs, unless the
  # machine has its own.
  local policy=/usr/sbin/policy-rc.d placed=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/lib/common.sh: no service starts while hvd installs packages\nexit 101\n' |
      $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && placed=yes
  fi
  local status=0 enabled_before
  enabled_before="$(hvd_services_enabled_at_boot)"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1 ||
    status=$?
  [ -n "$placed" ] && $sudo rm -f "$policy"
  # Their maintainer scripts also enable those services at boot (systemd
  # links, sysv-rc start links); what this install enabled is disabled
  # again, as an administrator would (a package upgrade then leaves it
  # disabled). What was enabled before stays as it was.
  local kind name
  while read -r kind name; do
    case "$kind" in
      systemd) $sudo systemctl --root=/ disable "$name" >>"$log" 2>&1 ;;
      sysv) $sudo update-rc.d "$name" disable >>"$log" 2>&1 ;;
    esac || status=$?
  done < <(comm -13 <(printf '%s\n' "$enabled_before") <(hvd_services_enabled_at_boot))
  if [ "$status" -ne 0 ]; then
    tail -n 30 "$log" >&2
    rm -f "$log"
    hvd_die "apt-get could not install: ${missing[*]}"
  fi
  rm -f "$log"
}

# hvd_services_enabled_at_boot: "systemd UNIT" for each unit a target
# wants or requires, "sysv NAME" for each start link of runlevels 2-5,
# sorted.
hvd_services_enabled_at_boot() {
  {
    find /etc/systemd/system -mindepth 2 -maxdepth 2 -type l \
      \( -path '*.wants/*' -o -path '*.requires/*' \) -printf 'systemd %f\n'
    find /etc/rc2.d /etc/rc3.d /etc/rc4.d /etc/rc5.d -maxdepth 1 -type l \
      -name 'S[0-9][0-9]*' -printf 'sysv %f\n' | sed -E 's/^sysv S[0-9]{2}/sysv /'
  } 2>/dev/null | sort -u
}

# hvd_cmake_configure DIR CMAKE-ARGS...: configures the build folder DIR
# with Ninja, which schedules the whole tree as one graph and keeps each
# step's time in DIR/.ninja_log (where docs/testing.md's build figures come
# from). A folder configured with another generator is emptied first:
# CMake refuses to switch.
hvd_cmake_configure() {
  local dir="$1"
  shift
  if [ -f "$dir/CMakeCache.txt" ] &&
     ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
    echo "note: $dir was configured for another generator; rebuilding it with Ninja"
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
  cmake -G Ninja -S "$hvd_root" -B "$dir" "$@"
}
