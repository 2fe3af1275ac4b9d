package testenv

// PlaneDirs returns the directories of e's kube-apiserver (certificates)
// and etcd (data), which appear on their command lines.
func PlaneDirs(e *Env) []string {
	certDir, dataDir := planeDirs(e.te)
	return []string{certDir, dataDir}
}

// InstallShared installs opts' CRDs on a shared plane, as Main does for a
// package attached to one.
var InstallShared = installShared

// SharedPlane returns the plane file Main would attach a package with
// opts to ("" for none) and whether that plane runs kube-controller-manager
// and kwok.
func SharedPlane(opts Options) (path string, controllerManager, kwok bool, err error) {
	path, p, err := sharedPlane(opts)
	return path, p.ControllerManager, p.Kwok, err
}
