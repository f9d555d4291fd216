#!/usr/bin/env bash
# Installs what is missing, builds, and starts gpuqd in the background with the local executor
# (examples/standalone.yaml: this machine's GPUs, or 8 virtual ones; three queues in a cohort;
# state, logs and pid files under ./var/). On the first run (a state file with no job in it yet)
# it submits a few demo jobs from two queues; then it shows the queues and the jobs, and says how
# to submit one, how to go on and how to stop it.
#
# Run it again at any time: a gpuqd it started before is stopped (SIGTERM; its jobs keep
# running) and the new build is started on the same state, adopting them.
# Extra arguments go to gpuqd (e.g. --grpc 127.0.0.1:7533 --http 127.0.0.1:7534).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUQ_WERROR=ON >/dev/null
cmake --build build --target gpuqd gpuq gpuq-shim

# Tab completion for gpuq in bash and zsh (docs/tasks/standalone.md, Shell completion), where this account may
# install it; new shells pick it up (bash through bash-completion).
if [[ -w /usr/local/share ]]; then
  mkdir -p /usr/local/share/bash-completion/completions /usr/local/share/zsh/site-functions
  build/cli/gpuq completion bash >/usr/local/share/bash-completion/completions/gpuq
  build/cli/gpuq completion zsh >/usr/local/share/zsh/site-functions/_gpuq
fi

mkdir -p var
PIDFILE=var/gpuqd.pid
GPUQD_LOG=var/gpuqd.log

# Our earlier gpuqd, if it still runs: stopped cleanly (its jobs run on and are adopted).
if [[ -f $PIDFILE ]]; then
  old=$(cat "$PIDFILE")
  if kill -0 "$old" 2>/dev/null && grep -q gpuqd "/proc/$old/cmdline" 2>/dev/null; then
    echo "Stopping the gpuqd started earlier (pid $old)..."
    kill -TERM "$old"
    for _ in $(seq 1 100); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$old" 2>/dev/null; then
      echo "gpuqd (pid $old) did not stop within 10 s; stop it (kill $old) and run this again" >&2
      exit 1
    fi
  fi
  rm -f "$PIDFILE"
fi

GRPC=127.0.0.1:7433
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [[ ${args[i]} == --grpc ]] && GRPC=${args[i + 1]:-$GRPC}
  [[ ${args[i]} == --grpc=* ]] && GRPC=${args[i]#--grpc=}
done
# gpuq talks to gpuqd through its Unix socket (beside the state file): the caller is this
# account, as the kernel says (docs/tasks/tenants-and-security.md). Over TCP it would be anonymous.
export GPUQ_SERVER=unix:$ROOT/var/gpuqd.sock

nohup build/daemon/gpuqd --config examples/standalone.yaml "$@" >>"$GPUQD_LOG" 2>&1 </dev/null &
echo $! >"$PIDFILE"
GPUQ=$ROOT/build/cli/gpuq

# Ready once it answers (the state file is loaded before it serves).
for _ in $(seq 1 100); do
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "gpuqd did not start; the end of $GPUQD_LOG says why:" >&2
    tail -n 20 "$GPUQD_LOG" >&2
    rm -f "$PIDFILE"
    exit 1
  fi
  "$GPUQ" queues >/dev/null 2>&1 && break
  sleep 0.1
done

echo
demo='echo "job $GPUQ_JOB_ID in $GPUQ_QUEUE: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep 20'
# The demo jobs only once: on a state file that holds no job yet (not again on every re-run).
if ! held=$("$GPUQ" ls --all --limit 1 2>&1); then
  echo "Could not list the jobs, so no demo jobs were submitted: $held" >&2
elif [[ $held == "No jobs" ]]; then
  echo "Demo jobs (each prints the GPUs it was given, then sleeps):"
  "$GPUQ" submit --queue vision --gpus 2 --name resnet -- sh -c "$demo"
  "$GPUQ" submit --queue vision --gpus 4 --name vit -- sh -c "$demo"
  "$GPUQ" submit --queue nlp --gpus 1 --name bert -- sh -c "$demo"
  "$GPUQ" submit --queue nlp --gpus 500m --name tokenizer -- sh -c "$demo"
  "$GPUQ" submit --queue nlp --gpus 4 --name llama -- sh -c "$demo"
  sleep 1
else
  echo "The state file already holds jobs: no demo jobs submitted this time."
fi
echo
"$GPUQ" queues
echo
"$GPUQ" ls

cat <<MSG

gpuqd runs in the background (pid $(cat "$PIDFILE"); its socket var/gpuqd.sock, and gRPC on
$GRPC for anonymous reads; its log: $GPUQD_LOG; job output under var/logs/). Use it with
build/cli/gpuq from this directory (it finds ./var/gpuqd.sock), for example:
  build/cli/gpuq submit --queue vision --gpus 2 -- python train.py    # submit a job
  build/cli/gpuq submit --queue nlp --gpus 1 --name demo -- sh -c 'nvidia-smi -L; sleep 20'
  build/cli/gpuq ls                 # unfinished jobs
  build/cli/gpuq ls --all           # jobs, finished ones too
  build/cli/gpuq logs JOB_ID -f     # a job's output
  build/cli/gpuq watch              # state changes as they happen
Tab completion (commands, flags, queues, job ids): new shells have it where /usr/local/share was
writable; in this one: source <(build/cli/gpuq completion bash)   (zsh: completion zsh)
Stop it with: kill \$(cat var/gpuqd.pid)   (running jobs keep running and are adopted at the next start)
MSG
