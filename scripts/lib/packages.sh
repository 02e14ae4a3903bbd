# The Debian packages hvd's scripts install, one list per purpose, so that
# each script asks apt for what its purpose needs and nothing more
# (docs/testing.md, "Packages"). Source it after lib/common.sh.

# Compiling hvd: hvdrun, the runtime, the Python extension.
hvd_build_packages=(g++ cmake ninja-build pkg-config lld
  libgloo-dev libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libssl-dev
  libcli11-dev libyaml-cpp-dev libboost-dev python3-dev pybind11-dev
  libmunge-dev)
# Running a job, on every node of an installed hvd too (docs/install.md):
# the Python that imports hvd with Debian's torch and numpy, the libraries
# hvdrun and the extension load (test_install checks the list against
# them), and the ssh client that reaches other hosts.
hvd_run_packages=(python3 python3-numpy python3-torch openssh-client
  libgloo0 libcpp-httplib0.11 libssl3 libspdlog1.10 libfmt9 libyaml-cpp0.7
  libmunge2 libstdc++6)
# Building and installing hvd's wheel into a venv (docs/install.md).
hvd_wheel_packages=(python3-pip python3-setuptools python3-wheel python3-venv)
# The C++ unit tests.
hvd_unit_test_packages=(libgtest-dev)
# The end-to-end tests: pytest, its workers, the metrics parser.
hvd_pytest_packages=(python3-pytest python3-pytest-xdist python3-cryptography
  python3-prometheus-client)
# The test bed of network-namespace hosts with their own sshd
# (scripts/cluster/), for the tests and the cluster demo.
hvd_bed_packages=(openssh-server openssh-client iproute2)
# The Slurm test cluster over the bed (scripts/cluster/slurm-up.sh), and
# tcpdump, which captures its steps' traffic (test_slurm_sealed.py).
hvd_slurm_packages=(slurmctld slurmd slurm-client slurmdbd munge
  mariadb-server tcpdump)
# etcd: the member the C++ client's tests start, and the cluster over the
# bed (scripts/cluster/etcd-up.sh). The openssl tool, which makes the
# certificates of the client's TLS test, comes with the build packages.
hvd_etcd_packages=(etcd-server etcd-client)
# The status page's browser test: Debian's chromium, driven by
# playwright-core from npm (scripts/test.sh takes an npm from elsewhere
# too).
hvd_browser_packages=(chromium nodejs npm)
# The sanitizer and fuzz stages.
hvd_sanitizer_packages=(clang libclang-rt-14-dev llvm)

# Every list a test run adds to setup's.
hvd_test_packages=("${hvd_unit_test_packages[@]}" "${hvd_pytest_packages[@]}"
  "${hvd_wheel_packages[@]}"
  "${hvd_bed_packages[@]}" "${hvd_slurm_packages[@]}" "${hvd_etcd_packages[@]}"
  "${hvd_browser_packages[@]}" "${hvd_sanitizer_packages[@]}")
