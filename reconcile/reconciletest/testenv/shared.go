package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// PlanesEnv is the environment variable that names the shared control
// planes [Main] may attach a package to ([Options.Shared]): a list of
// plane files, written by [Serve] (or cmd/testenv-plane), separated by
// the OS's path list separator (":" on Linux).
const PlanesEnv = "RECONCILEKIT_TESTENV_PLANES"

// CRDHashAnnotation is the annotation a package attached to a shared plane
// puts on each CRD it installs: the SHA-256 of the CRD's spec as the
// package read it. A package that finds the CRD installed with another
// hash fails to start instead of replacing the other package's CRD under
// its running tests.
const CRDHashAnnotation = "testenv.reconcilekit.io/crd-sha256"

// crdFieldOwner is the field manager of the CRDs a package installs on a
// shared plane.
const crdFieldOwner = "reconcilekit-testenv"

// plane is what a plane file holds.
type plane struct {
	// Kubeconfig reaches the plane's API server as a cluster admin.
	Kubeconfig []byte `json:"kubeconfig"`
	// Assets is the directory of the binaries the plane runs, where
	// [Env.Kubectl] finds kubectl.
	Assets string `json:"assets"`
	// ControllerManager and Kwok say what runs beside the API server, as
	// the Options of the same names.
	ControllerManager bool `json:"controllerManager"`
	Kwok              bool `json:"kwok"`
}

// Serve starts a control plane as [Start] does with opts, writes at path a
// plane file that [Main] attaches the packages with [Options.Shared] to
// when [PlanesEnv] names it, and serves until ctx is done: then it removes
// the file and stops the plane. The file appears only once the plane is
// ready, so its presence is the signal to start the tests. opts' CRDs are
// installed as an attached package installs them (see
// [CRDHashAnnotation]); APIServerFlags are refused, as a package with
// flags of its own never attaches.
//
// Packages from several test processes then share one kube-apiserver and
// etcd (and, with opts.ControllerManager or opts.Kwok, one
// kube-controller-manager and one kwok node) instead of starting one each:
// about 2 CPU-seconds and 3-4 seconds saved per package, and a CPU-second
// per minute of the package's run (docs/envtest-assets.md).
func Serve(ctx context.Context, opts Options, path string) error {
	if len(opts.APIServerFlags) > 0 {
		return errors.New("testenv: Serve: a shared plane takes no APIServerFlags: a package whose Options set them starts a plane of its own")
	}
	if path == "" {
		return errors.New("testenv: Serve: no path for the plane file")
	}
	crds := Options{CRDDirectoryPaths: opts.CRDDirectoryPaths, CRDs: opts.CRDs}
	opts.CRDDirectoryPaths, opts.CRDs = nil, nil
	env, err := Start(opts)
	if err != nil {
		return err
	}
	serve := func() error {
		if err := installShared(ctx, env.Config, crds); err != nil {
			return err
		}
		user, err := env.addUser(env.te, "testenv-shared")
		if err != nil {
			return fmt.Errorf("testenv: Serve: user: %w", err)
		}
		kubeconfig, err := user.KubeConfig()
		if err != nil {
			return fmt.Errorf("testenv: Serve: kubeconfig: %w", err)
		}
		data, err := json.Marshal(plane{Kubeconfig: kubeconfig, Assets: env.Assets, ControllerManager: opts.ControllerManager, Kwok: opts.Kwok})
		if err != nil {
			return err
		}
		// Written whole, then renamed: a reader never sees half a file.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return fmt.Errorf("testenv: Serve: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("testenv: Serve: %w", err)
		}
		<-ctx.Done()
		return os.Remove(path)
	}
	return errors.Join(serve(), env.Stop())
}

// sharedPlane returns the path and content of the first plane file that
// [PlanesEnv] names whose plane runs what opts asks for, and "" when the
// package starts a plane of its own: opts.Shared unset, APIServerFlags
// set, PlanesEnv unset or no plane that matches. A plane file that cannot
// be read is an error: the environment promised a plane that is not
// there.
func sharedPlane(opts Options) (string, plane, error) {
	list := os.Getenv(PlanesEnv)
	if !opts.Shared || len(opts.APIServerFlags) > 0 || list == "" {
		return "", plane{}, nil
	}
	for _, path := range filepath.SplitList(list) {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", plane{}, fmt.Errorf("testenv: %s names a plane file that cannot be read: %w", PlanesEnv, err)
		}
		var p plane
		if err := json.Unmarshal(data, &p); err != nil || len(p.Kubeconfig) == 0 {
			return "", plane{}, fmt.Errorf("testenv: %s names %s, which is not a plane file of testenv.Serve (%v)", PlanesEnv, path, err)
		}
		if p.ControllerManager == opts.ControllerManager && p.Kwok == opts.Kwok {
			return path, p, nil
		}
	}
	return "", plane{}, nil
}

// attachShared fills e with the shared plane p (from the file at path):
// the package's CRDs installed beside those of the other packages there,
// and nothing started or stopped but clients.
func (e *Env) attachShared(opts Options, path string, p plane) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(p.Kubeconfig)
	if err != nil {
		return fmt.Errorf("testenv: the shared plane of %s: %w", path, err)
	}
	tune(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := installShared(ctx, cfg, opts); err != nil {
		return fmt.Errorf("testenv: the shared plane of %s: %w", path, err)
	}
	reader, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return fmt.Errorf("testenv: client: %w", err)
	}
	assets := p.Assets
	if assets == "" {
		assets, _ = FindAssets()
	}
	e.Config, e.Assets, e.reader, e.users = cfg, assets, reader, new(sync.Mutex)
	e.attached, e.shared, e.kubeconfig = true, path, string(p.Kubeconfig)
	e.waitTimeout = opts.WaitTimeout
	if e.waitTimeout <= 0 {
		e.waitTimeout = DefaultWaitTimeout
	}
	return nil
}

// installShared installs the CRDs of opts on a plane other packages use at
// the same time: each is created with [CRDHashAnnotation]; one that
// exists already is kept when its annotation matches and is an error
// otherwise. Then it waits until the API server serves them all.
func installShared(ctx context.Context, cfg *rest.Config, opts Options) error {
	o := envtest.CRDInstallOptions{Paths: opts.CRDDirectoryPaths, CRDs: opts.CRDs, ErrorIfPathMissing: len(opts.CRDDirectoryPaths) > 0}
	if err := envtest.ReadCRDFiles(&o); err != nil {
		return fmt.Errorf("reading CRDs: %w", err)
	}
	if len(o.CRDs) == 0 {
		return nil
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	for _, crd := range o.CRDs {
		want, err := crdHash(crd)
		if err != nil {
			return err
		}
		crd := crd.DeepCopy()
		crd.ResourceVersion = ""
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Annotations[CRDHashAnnotation] = want
		err = c.Create(ctx, crd, client.FieldOwner(crdFieldOwner))
		if err == nil {
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
		var there apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &there); err != nil {
			return fmt.Errorf("reading CRD %s: %w", crd.Name, err)
		}
		if got := there.Annotations[CRDHashAnnotation]; got != want {
			return fmt.Errorf("CRD %s is installed with another spec (%s %q, this package's %q): "+
				"packages on a shared plane must install the same CRDs; give this package a plane of its own (Options.Shared false)",
				crd.Name, CRDHashAnnotation, got, want)
		}
	}
	o.MaxTime, o.PollInterval = time.Minute, 100*time.Millisecond
	if err := envtest.WaitForCRDs(cfg, o.CRDs, o); err != nil {
		return fmt.Errorf("waiting for the CRDs to be served: %w", err)
	}
	return nil
}

// crdHash is the hex SHA-256 of crd's spec as JSON.
func crdHash(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	data, err := json.Marshal(crd.Spec)
	if err != nil {
		return "", fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
