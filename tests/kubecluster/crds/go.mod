// Only for its go.sum: the modules whose CustomResourceDefinitions the tests install on the real
// control plane (copy-crds.cmake copies them from Go's module cache). Nothing here is built.
module gpuq/tests/kubecluster/crds

go 1.26.0

require (
	sigs.k8s.io/jobset v0.8.2
	sigs.k8s.io/lws v0.6.2
	sigs.k8s.io/scheduler-plugins v0.34.7
)
