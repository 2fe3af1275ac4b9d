// Package ginkgosuite shows testenv beside a Ginkgo suite as kubebuilder
// scaffolds it (suite_test.go): the suite's envtest.Environment is started
// once, in TestMain, and [testenv.Attach] gives the package's tests an Env
// on that same control plane. Ginkgo specs and plain Go tests then share one
// kube-apiserver and etcd instead of starting two per package; specs pass
// GinkgoTB() where testenv wants a testing.TB.
//
// The package has only tests; read suite_test.go.
package ginkgosuite
