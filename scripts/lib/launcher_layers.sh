# Sourced by scripts/test.sh's layering stage: launcher/src's folders, from
# the lowest to the highest. A file may include headers of its own folder
# and of folders below it, never above (each folder's README.md says why it
# sits where it does).
launcher_layers=(job policy process slurm remote status options driver)

# hvd_check_launcher_layers ROOT: prints every include that runs back up
# and fails if there is one.
hvd_check_launcher_layers() {
  local root="$1" rank=0 bad=0 folder above file line
  for folder in "${launcher_layers[@]}"; do
    above=("${launcher_layers[@]:$((rank + 1))}")
    rank=$((rank + 1))
    [ ${#above[@]} -eq 0 ] && continue
    local pattern
    pattern="#include \"($(IFS='|'; echo "${above[*]}"))/"
    while IFS= read -r line; do
      echo "error: launcher/src/$folder may not include a higher folder: $line" >&2
      bad=1
    done < <(grep -rnE "$pattern" "$root/launcher/src/$folder" || true)
  done
  # Every file lives in a layer.
  for file in "$root"/launcher/src/*; do
    if [ -f "$file" ]; then
      echo "error: $file is in no folder of launcher/src" >&2
      bad=1
    fi
  done
  return "$bad"
}
