# Copies from Kueue's module (where Go's module cache has it) what `kube-cluster bench compare`
# installs: config/components/crd/bases/*.yaml to OUT/crd, rbac/role.yaml to OUT/role.yaml,
# rbac/manager_secrets_role.yaml to OUT/secrets-role.yaml, webhook/manifests.yaml to
# OUT/webhooks.yaml, and the module's LICENSE.
execute_process(COMMAND ${GO} list -m -f "{{.Dir}}" sigs.k8s.io/kueue
                OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR dir STREQUAL "")
  message(FATAL_ERROR "go list -m sigs.k8s.io/kueue failed (${rc})")
endif()
file(REMOVE_RECURSE ${OUT})
file(GLOB crds ${dir}/config/components/crd/bases/*.yaml)
file(COPY ${crds} DESTINATION ${OUT}/crd)
file(COPY_FILE ${dir}/config/components/rbac/role.yaml ${OUT}/role.yaml)
file(COPY_FILE ${dir}/config/components/rbac/manager_secrets_role.yaml ${OUT}/secrets-role.yaml)
file(COPY_FILE ${dir}/config/components/webhook/manifests.yaml ${OUT}/webhooks.yaml)
file(COPY_FILE ${dir}/LICENSE ${OUT}/LICENSE)
