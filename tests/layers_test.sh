#!/usr/bin/env bash
# The folders' dependencies point one way (docs/development.md, "Layout"): the includes between
# folders make no cycle, the pure engine (scheduler/, preemption/, drf/) and spec/ include nothing
# above them, auth/ (who calls; accounts, which the local executor runs jobs as) only spec/, and the daemon's side (api/, daemon/, auth/, binder/,
# storage/) includes nothing of the simulator. Read from the sources' #include lines.
set -u
root=$1
cd "$root" || exit 2
folders="web api cli daemon auth binder storage sim scheduler preemption drf spec"
fail=0

edges=$(for f in $folders; do
  grep -rhoE '^#include "[a-z_]+/' --include='*.cpp' --include='*.hpp' "$f" |
    sed -E 's|#include "([a-z_]+)/|\1|' | sort -u | while read -r to; do
      case " $folders " in *" $to "*) [ "$to" != "$f" ] && echo "$f $to" ;; esac
    done
done)
echo "folder includes:"
echo "$edges" | sed 's/^/  /'

if ! echo "$edges" | tsort >/dev/null 2>/tmp/layers_tsort.$$; then
  echo "FAIL: the includes between folders make a cycle:"; cat /tmp/layers_tsort.$$; fail=1
fi
rm -f /tmp/layers_tsort.$$

allowed() {  # folder, the folders it may include
  local from=$1; shift
  echo "$edges" | awk -v f="$from" '$1 == f { print $2 }' | while read -r to; do
    case " $* " in *" $to "*) ;; *) echo "FAIL: $from/ includes $to/ (allowed: $*)"; ;; esac
  done
}
bad=$( {
  allowed spec
  allowed drf spec
  allowed preemption drf spec
  allowed scheduler preemption drf spec
  allowed storage scheduler preemption drf spec
  allowed binder auth storage scheduler preemption drf spec
  allowed auth spec
  allowed daemon auth binder storage scheduler preemption drf spec
  allowed api daemon auth binder storage scheduler preemption drf spec
  allowed web daemon auth binder storage scheduler preemption drf spec
} )
if [ -n "$bad" ]; then echo "$bad"; fail=1; fi
[ $fail -eq 0 ] && echo "ok: no cycle; every folder includes only the folders below it"
exit $fail
