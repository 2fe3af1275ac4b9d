// Package envtestassets names where reconcilekit keeps the kube-apiserver and
// etcd binaries that tests run against, so that the command that builds them
// (cmd/envtest-assets) and the test package that uses them
// (reconcile/reconciletest/testenv) agree without either hard-coding a path.
package envtestassets

import (
	"os"
	"path/filepath"
)

// Default versions of the control plane the tests run against.
// k8s.io/kubernetes v1.37.2's source zip is refused by the module proxy this
// project is built on; v1.37.1 resolves.
const (
	DefaultKubeVersion = "v1.37.1"
	DefaultEtcdVersion = "v3.6.16"
)

// Versions returns the kube-apiserver and etcd versions in force: the
// defaults, overridden by RECONCILEKIT_KUBE_VERSION and
// RECONCILEKIT_ETCD_VERSION.
func Versions() (kube, etcd string) {
	return envOr("RECONCILEKIT_KUBE_VERSION", DefaultKubeVersion), envOr("RECONCILEKIT_ETCD_VERSION", DefaultEtcdVersion)
}

// Dir returns the asset directory for the given versions:
// RECONCILEKIT_ENVTEST_DIR when set, else
// <user cache dir>/reconcilekit/envtest/k8s-<kube>_etcd-<etcd>.
func Dir(kube, etcd string) (string, error) {
	if d := os.Getenv("RECONCILEKIT_ENVTEST_DIR"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "reconcilekit", "envtest", "k8s-"+kube+"_etcd-"+etcd), nil
}

// Complete reports whether dir holds executable files with every given name.
func Complete(dir string, names ...string) bool {
	if dir == "" {
		return false
	}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
