# Copies from Go's module cache (downloading what crds/go.mod pins) the CustomResourceDefinitions
# the real-control-plane tests install, with each module's LICENSE: scheduler-plugins' PodGroup,
# JobSet's JobSet, LeaderWorkerSet's LeaderWorkerSet, into OUT.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
foreach(entry "sigs.k8s.io/scheduler-plugins|config/crd/bases/scheduling.x-k8s.io_podgroups.yaml|scheduler-plugins"
              "sigs.k8s.io/jobset|config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml|jobset"
              "sigs.k8s.io/lws|config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml|lws")
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 module)
  list(GET parts 1 path)
  list(GET parts 2 short)
  execute_process(COMMAND ${GO} mod download -json ${module} OUTPUT_VARIABLE json RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "go mod download ${module} failed (${rc}): ${json}")
  endif()
  string(JSON dir GET "${json}" Dir)
  file(COPY_FILE ${dir}/${path} ${OUT}/${short}.yaml)
  file(COPY_FILE ${dir}/LICENSE ${OUT}/${short}.LICENSE)
endforeach()
