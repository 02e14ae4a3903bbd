# Sourced by scripts/test.sh's layering stage: the folders of launcher/src
# and runtime/src, each list from the lowest layer to the highest. A file
# may include headers of its own folder and of folders below it, never
# above (each folder's README.md says why it sits where it does).
launcher_layers=(job policy leader process slurm remote status options driver)
runtime_layers=(tuning transport negotiation ops engine elastic)

# hvd_check_layers ROOT DIR LAYER...: prints every include in ROOT/DIR's
# folders that runs back up and fails if there is one.
hvd_check_layers() {
  local root="$1" dir="$2" rank=0 bad=0 folder line pattern
  shift 2
  local layers=("$@") above
  for folder in "${layers[@]}"; do
    above=("${layers[@]:$((rank + 1))}")
    rank=$((rank + 1))
    [ -d "$root/$dir/$folder" ] || {
      echo "error: $dir/$folder is listed as a layer but does not exist" >&2
      bad=1
      continue
    }
    [ ${#above[@]} -eq 0 ] && continue
    pattern="#include \"($(IFS='|'; echo "${above[*]}"))/"
    while IFS= read -r line; do
      echo "error: $dir/$folder may not include a higher folder: $line" >&2
      bad=1
    done < <(grep -rnE "$pattern" "$root/$dir/$folder" || true)
  done
  # Every folder is a layer.
  for folder in "$root/$dir"/*/; do
    folder="$(basename "$folder")"
    if [[ " ${layers[*]} " != *" $folder "* ]]; then
      echo "error: $dir/$folder is in no layer (scripts/lib/folder_layers.sh)" >&2
      bad=1
    fi
  done
  return "$bad"
}

# hvd_check_folder_layers ROOT: both trees. launcher/src holds folders only;
# a file at the top of runtime/src implements a public header of
# runtime/include/hvd/runtime/ of the same name (the front door, which may
# include every folder).
hvd_check_folder_layers() {
  local root="$1" bad=0 file name
  hvd_check_layers "$root" launcher/src "${launcher_layers[@]}" || bad=1
  hvd_check_layers "$root" runtime/src "${runtime_layers[@]}" || bad=1
  for file in "$root"/launcher/src/*; do
    if [ -f "$file" ]; then
      echo "error: $file is in no folder of launcher/src" >&2
      bad=1
    fi
  done
  for file in "$root"/runtime/src/*; do
    [ -f "$file" ] || continue
    name="$(basename "$file")"
    if [[ "$name" != *.cc || ! -f "$root/runtime/include/hvd/runtime/${name%.cc}.h" ]] &&
       [ "$name" != README.md ]; then
      echo "error: $file is in no folder of runtime/src and implements no header of runtime/include/hvd/runtime/" >&2
      bad=1
    fi
  done
  return "$bad"
}
