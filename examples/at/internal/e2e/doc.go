// Package e2e holds the At operator's deployment tests; it has no code of
// its own. They run the operator binary the way a cluster would, against a
// real kube-apiserver (envtest, with its RBAC authorizer):
//
//   - config/default is applied with kubectl, as a user would;
//   - the operator runs as the service account it deploys, with a token
//     from the TokenRequest API, so with the generated role and nothing
//     more, and takes Ats through their whole life;
//   - the same service account is refused what the role does not grant;
//   - two replicas hand over leadership when the leader is stopped
//     gracefully (the Lease is released, the standby takes over at once)
//     and when it is killed (the standby waits for the lease to expire),
//     and every At still ends DONE with exactly one Pod;
//   - the Deployment's Pod template is admitted under the "restricted" Pod
//     Security Standard.
package e2e
