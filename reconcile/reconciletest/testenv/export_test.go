package testenv

// PlaneDirs returns the directories of e's kube-apiserver (certificates)
// and etcd (data), which appear on their command lines.
func PlaneDirs(e *Env) []string {
	certDir, dataDir := planeDirs(e.te)
	return []string{certDir, dataDir}
}
