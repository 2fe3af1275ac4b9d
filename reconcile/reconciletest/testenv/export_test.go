package testenv

// PlaneDirs returns the directories of e's kube-apiserver (certificates)
// and etcd (data), which appear on their command lines.
func PlaneDirs(e *Env) []string {
	cp := e.te.ControlPlane
	return []string{cp.APIServer.CertDir, cp.Etcd.DataDir}
}
