package testenv

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/reconcilekit/reconcilekit/internal/envtestassets"
)

// controllers is the list of kube-controller-manager's controllers that
// [Options.ControllerManager] runs: those of the workloads an operator
// creates, the garbage collector, and what a namespace and a Service need.
// The node lifecycle, the service account tokens, certificates and cloud
// controllers are left out: envtest has no kubelet to watch, and tests do
// not need them.
var controllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller", "daemonset-controller",
	"job-controller", "cronjob-controller", "ttl-after-finished-controller", "disruption-controller",
	"garbage-collector-controller", "namespace-controller", "serviceaccount-controller",
	"endpointslice-controller", "persistentvolume-binder-controller",
}

// NodeName is the node kwok plays the kubelet of ([Options.Kwok]).
const NodeName = "testenv-node"

// kwokStages are the kwok stages of [Options.Kwok].
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// components are what testenv started beside envtest for
// Options.ControllerManager and Options.Kwok.
type components struct {
	processes  []*process
	stopBinder func()
	workDir    string
}

// process is a control-plane component testenv started beside envtest.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// startProcess runs bin with args, its output in a log file of dir, in a
// process group of its own so that Stop ends it and its children.
func startProcess(dir, name, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("testenv: starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	return p, nil
}

// stop ends the process; it returns an error when the process had stopped
// by itself before, with the end of its log.
func (p *process) stop() error {
	select {
	case err := <-p.done:
		return fmt.Errorf("testenv: %s stopped by itself (%v); the end of its log:\n%s", p.name, err, tail(p.log))
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

// tail returns the last lines of a log file.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// needAssets reports the binaries opts needs beside kube-apiserver and
// etcd that dir lacks, as an error wrapping ErrNoAssets.
func needAssets(dir string, opts Options) error {
	var missing, flags []string
	if opts.ControllerManager && !envtestassets.Complete(dir, "kube-controller-manager") {
		missing, flags = append(missing, "kube-controller-manager"), append(flags, "-controller-manager")
	}
	if opts.Kwok && !envtestassets.Complete(dir, "kwok") {
		missing, flags = append(missing, "kwok"), append(flags, "-kwok v0.8.0")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%s lacks %s: go run github.com/reconcilekit/reconcilekit/cmd/envtest-assets %s builds it)",
		ErrNoAssets, dir, strings.Join(missing, " and "), strings.Join(flags, " "))
}

// startControllers starts what opts asks for beside the API server:
// kube-controller-manager, kwok with its node and the binder of Pods.
func (e *Env) startControllers(te *envtest.Environment, opts Options) (err error) {
	if !opts.ControllerManager && !opts.Kwok {
		return nil
	}
	if err := needAssets(e.Assets, opts); err != nil {
		return err
	}
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return fmt.Errorf("testenv: client: %w", err)
	}
	dir, err := os.MkdirTemp("", "testenv-")
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	e.extra = &components{workDir: dir}
	kubeconfig := func(name string) (string, error) {
		user, err := e.addUser(te, name)
		if err != nil {
			return "", fmt.Errorf("testenv: user %s: %w", name, err)
		}
		data, err := user.KubeConfig()
		if err != nil {
			return "", fmt.Errorf("testenv: kubeconfig of %s: %w", name, err)
		}
		path := filepath.Join(dir, name+".kubeconfig")
		return path, os.WriteFile(path, data, 0o600)
	}
	if opts.ControllerManager {
		kc, err := kubeconfig("kube-controller-manager")
		if err != nil {
			return err
		}
		p, err := startProcess(dir, "kube-controller-manager", filepath.Join(e.Assets, "kube-controller-manager"),
			"--kubeconfig="+kc, "--controllers="+strings.Join(controllers, ","),
			"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false",
			"--kube-api-qps=200", "--kube-api-burst=400")
		if err != nil {
			return err
		}
		e.extra.processes = append(e.extra.processes, p)
	}
	if opts.Kwok {
		ctx := context.Background()
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}, Labels: nodeLabels}}
		if err := c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("testenv: creating node %s: %w", NodeName, err)
		}
		kc, err := kubeconfig("kwok")
		if err != nil {
			return err
		}
		stages := filepath.Join(dir, "kwok-stages.yaml")
		if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		p, err := startProcess(dir, "kwok", filepath.Join(e.Assets, "kwok"),
			"--kubeconfig="+kc, "--manage-all-nodes=true", "--config="+stages)
		if err != nil {
			return err
		}
		e.extra.processes = append(e.extra.processes, p)
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			bindPods(bctx, c)
		}()
		e.extra.stopBinder = func() { cancel(); <-done }
	}
	return nil
}

// stopControllers ends what startControllers started, and reports a
// component that had stopped by itself.
func (e *Env) stopControllers() error {
	x := e.extra
	if x == nil {
		return nil
	}
	e.extra = nil
	if x.stopBinder != nil {
		x.stopBinder()
	}
	var errs []error
	for _, p := range x.processes {
		errs = append(errs, p.stop())
	}
	if err := errors.Join(errs...); err != nil {
		return err // keep the logs the error points at
	}
	return os.RemoveAll(x.workDir)
}

// nodeLabels are the labels of the kwok node.
var nodeLabels = map[string]string{"type": "kwok", corev1.LabelHostname: NodeName, corev1.LabelOSStable: "linux"}

// bindPods is the scheduler of [Options.Kwok]: envtest runs no
// kube-scheduler, so it binds every Pod without a node to the kwok node
// when the node's labels match the Pod's nodeSelector, and otherwise marks
// it Unschedulable, as the scheduler would (affinities, taints and
// resources are not considered).
func bindPods(ctx context.Context, c client.WithWatch) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &corev1.PodList{})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
				continue
			}
			if !fits(p) {
				unschedulable(ctx, c, p)
				continue
			}
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
				Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}
			// A conflict is a Pod bound already; a Pod that vanished needs
			// no node.
			_ = c.SubResource("binding").Create(ctx, p, binding)
		}
		w.Stop()
	}
}

// fits reports whether the kwok node's labels match p's nodeSelector.
func fits(p *corev1.Pod) bool {
	for k, v := range p.Spec.NodeSelector {
		if nodeLabels[k] != v {
			return false
		}
	}
	return true
}

// unschedulable records on p that no node can take it, once.
func unschedulable(ctx context.Context, c client.Client, p *corev1.Pod) {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			return
		}
	}
	patched := p.DeepCopy()
	patched.Status.Conditions = append(patched.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.", LastTransitionTime: metav1.Now(),
	})
	_ = c.Status().Patch(ctx, patched, client.StrategicMergeFrom(p))
}
