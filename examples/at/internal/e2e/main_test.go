package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	atv1 "github.com/reconcilekit/reconcilekit/examples/at/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/internal/gobuild"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

var env testenv.Env

// No CRD is installed here: config/default installs it, as on a cluster.
func TestMain(m *testing.M) {
	// The operator runs in its own processes, with its own logs; the
	// clients of the tests have nothing to say.
	ctrllog.SetLogger(logr.Discard())
	testenv.Main(m, &env, testenv.Options{
		AddToScheme: []func(*runtime.Scheme) error{atv1.AddToScheme},
	})
}

// What config/default deploys.
const (
	defaultKustomization = "../../config/default"
	operatorNamespace    = "at-system"
	serviceAccount       = "at-controller"
	serviceAccountUser   = "system:serviceaccount:" + operatorNamespace + ":" + serviceAccount
	leaseName            = "at.cnat.reconcilekit.dev"
	operatorPackage      = "github.com/reconcilekit/reconcilekit/examples/at"
)

// kubectl runs kubectl as a cluster admin and returns its standard output;
// it fails the test, with stderr, when kubectl fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := kubectlE(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

var (
	adminKubeconfigOnce sync.Once
	adminKubeconfig     []byte
)

func kubectlE(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := env.Kubectl(t)
	// One admin user for the package: envtest signs a certificate per user.
	adminKubeconfigOnce.Do(func() {
		adminKubeconfig, err = os.ReadFile(env.Kubeconfig(t))
	})
	if err != nil || len(adminKubeconfig) == 0 {
		t.Fatalf("admin kubeconfig: %v", err)
	}
	kc := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := os.WriteFile(kc, adminKubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kc}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// deploy applies config/default, as the README tells a user to, and waits
// for the At CRD to be served. It is idempotent.
func deploy(t *testing.T) {
	t.Helper()
	kubectl(t, "apply", "-k", defaultKustomization)
	kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/ats.cnat.reconcilekit.dev")
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// operator's service account, with a token from the TokenRequest API (as
// the kubelet mounts into the operator's Pods), and whose context has the
// given namespace. It returns its path and a client that uses it.
func serviceAccountKubeconfig(t *testing.T, namespace string) (string, client.Client) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	tr, err := cs.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(t.Context(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", serviceAccountUser, err)
	}
	server := env.Config.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: serviceAccount, Namespace: namespace}
	kc.CurrentContext = "operator"
	path := filepath.Join(t.TempDir(), "operator.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return path, c
}

// buildOperator returns the operator binary, built with -race when the
// tests run with it, from the go build cache: linked once, not once per
// test (see gobuild.Executable).
func buildOperator(t *testing.T) string {
	t.Helper()
	env.Require(t)
	var flags []string
	if raceEnabled {
		flags = append(flags, "-race")
	}
	bin, err := gobuild.Executable(t.Context(), t.TempDir(), operatorPackage, flags...)
	if err != nil {
		t.Fatalf("building the operator: %v", err)
	}
	return bin
}

// operator is one running operator process.
type operator struct {
	name string
	cmd  *exec.Cmd
	log  string // path of its combined stdout and stderr

	done    chan struct{} // closed when it has exited
	waitErr error         // set before done is closed
}

// startOperator runs the operator binary with args until the test ends:
// then it is stopped gracefully, killed if that takes too long, and its log
// is shown if the test failed. A data race it reports fails the test.
func startOperator(t *testing.T, bin, name string, args ...string) *operator {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{name: name, cmd: exec.Command(bin, args...), log: logPath, done: make(chan struct{})}
	op.cmd.Stdout, op.cmd.Stderr = f, f
	if err := op.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		op.waitErr = op.cmd.Wait()
		f.Close()
		close(op.done)
	}()
	t.Cleanup(func() {
		if !op.exited() {
			_ = op.cmd.Process.Signal(syscall.SIGTERM)
			if !op.wait(45 * time.Second) {
				_ = op.cmd.Process.Kill()
				<-op.done
			}
		}
		logs := op.logs(t)
		if strings.Contains(logs, "DATA RACE") {
			t.Errorf("%s reported a data race:\n%s", name, logs)
		} else if t.Failed() {
			t.Logf("log of %s (last 80 lines):\n%s", name, lastLines(logs, 80))
		}
	})
	return op
}

func (op *operator) exited() bool {
	select {
	case <-op.done:
		return true
	default:
		return false
	}
}

// wait reports whether the process exited within d.
func (op *operator) wait(d time.Duration) bool {
	select {
	case <-op.done:
		return true
	case <-time.After(d):
		return false
	}
}

func (op *operator) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := op.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s to %s: %v", sig, op.name, err)
	}
}

func (op *operator) logs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(op.log)
	if err != nil {
		t.Errorf("log of %s: %v", op.name, err)
	}
	return string(b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freeAddr returns a localhost address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady waits until the operator's /readyz at addr answers 200: its
// manager runs, so it is a candidate for leadership.
func waitReady(t *testing.T, op *operator, addr string) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if op.exited() {
			return false, fmt.Errorf("%s exited: %v", op.name, op.waitErr)
		}
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to be ready on %s: %v", op.name, addr, err)
	}
}

// deleteLease removes the leader election Lease, so that a test starts
// from no leader whatever the tests before it left.
func deleteLease(t *testing.T) {
	t.Helper()
	err := env.Client(t).Delete(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: leaseName}})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// waitLeaseHolder waits until the Lease is held and returns its holder.
func waitLeaseHolder(t *testing.T, op *operator) string {
	t.Helper()
	c := env.Client(t)
	var holder string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if op.exited() {
			return false, fmt.Errorf("%s exited: %v", op.name, op.waitErr)
		}
		lease := &coordinationv1.Lease{}
		err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: leaseName}, lease)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
		return holder != "", nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to take the Lease %s/%s: %v", op.name, operatorNamespace, leaseName, err)
	}
	return holder
}

// exitCode is the process's exit code, or -1 when a signal ended it.
func (op *operator) exitCode() int {
	var ee *exec.ExitError
	switch {
	case op.waitErr == nil:
		return 0
	case errors.As(op.waitErr, &ee):
		return ee.ExitCode()
	default:
		return -1
	}
}
