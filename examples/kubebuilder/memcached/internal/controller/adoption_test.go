package controller

// What the port onto reconcilekit adds to the scaffold's behaviour, beside
// the generated tests (which pass unmodified): a Deployment the scaffolded
// controller created is taken over and a port change applied, a converged
// Memcached costs no write, a missing image stalls it with Degraded True; the
// Memcached's own apply configuration (controller-gen's, as kubebuilder's
// --ssa generates) applies only on drift and removes what it stops setting;
// a suspended Memcached is left as edited and repaired when resumed; and a
// reconcile request is handled and recorded.

import (
	"context"
	"encoding/json"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/reconcilekit/reconcilekit/drift"
	"github.com/reconcilekit/reconcilekit/request"
	"github.com/reconcilekit/reconcilekit/suspend"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
	cachev1alpha1ac "example.com/memcached-operator/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

var _ = Describe("Memcached controller on reconcilekit", func() {
	var (
		ctx  context.Context
		key  types.NamespacedName
		r    *MemcachedReconciler
		memc *cachev1alpha1.Memcached
	)
	reconcileOnce := func() {
		GinkgoHelper()
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		Expect(err).NotTo(HaveOccurred())
	}
	deployment := func() *appsv1.Deployment {
		GinkgoHelper()
		dep := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, key, dep)).To(Succeed())
		return dep
	}

	BeforeEach(func() {
		ctx = context.Background()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "adoption-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		Expect(os.Setenv("MEMCACHED_IMAGE", "example.com/image:test")).To(Succeed())
		DeferCleanup(os.Unsetenv, "MEMCACHED_IMAGE")
		key = types.NamespacedName{Namespace: ns.Name, Name: "memcached"}
		memc = &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "memcached"},
			Spec: cachev1alpha1.MemcachedSpec{Size: ptr.To(int32(1)), ContainerPort: 11211}}
		Expect(k8sClient.Create(ctx, memc)).To(Succeed())
		r = &MemcachedReconciler{Client: k8sClient, Scheme: k8sClient.Scheme()}
	})

	It("takes over the Deployment the scaffolded controller created and applies a port change", func() {
		By("creating the Deployment as the scaffold did: under the manager \"manager\"")
		desired, err := r.deploymentForMemcached(memc)
		Expect(err).NotTo(HaveOccurred())
		data, err := json.Marshal(desired)
		Expect(err).NotTo(HaveOccurred())
		old := &appsv1.Deployment{}
		Expect(json.Unmarshal(data, old)).To(Succeed())
		Expect(ctrl.SetControllerReference(memc, old, k8sClient.Scheme())).To(Succeed())
		Expect(k8sClient.Create(ctx, old, client.FieldOwner("manager"))).To(Succeed())

		By("changing the port, which the scaffold never applied")
		memc.Spec.ContainerPort = 11212
		Expect(k8sClient.Update(ctx, memc)).To(Succeed())
		reconcileOnce() // adds the finalizer, converges
		reconcileOnce()
		ports := deployment().Spec.Template.Spec.Containers[0].Ports
		Expect(ports).To(HaveLen(1))
		Expect(ports[0].ContainerPort).To(Equal(int32(11212)))
		for _, mf := range deployment().ManagedFields {
			Expect(mf.Manager).NotTo(Equal("manager"), "the old controller's fields were taken over")
		}
	})

	It("writes nothing when the Memcached has converged", func() {
		reconcileOnce()
		reconcileOnce()
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(meta.IsStatusConditionTrue(memc.Status.Conditions, "Available")).To(BeTrue())
		Expect(meta.IsStatusConditionFalse(memc.Status.Conditions, "Degraded")).To(BeTrue())
		depRV, memcRV := deployment().ResourceVersion, memc.ResourceVersion
		reconcileOnce()
		Expect(deployment().ResourceVersion).To(Equal(depRV), "the Deployment was written")
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(memc.ResourceVersion).To(Equal(memcRV), "the Memcached was written")
	})

	It("applies a Memcached's generated apply configuration only when it drifted, and removes what it stops setting", func() {
		w := drift.NewWriter(k8sClient, "memcached-client")
		applied := func(size ...int32) *cachev1alpha1ac.MemcachedApplyConfiguration {
			spec := cachev1alpha1ac.MemcachedSpec().WithContainerPort(11211)
			if len(size) > 0 {
				spec.WithSize(size[0])
			}
			return cachev1alpha1ac.Memcached("applied", key.Namespace).WithSpec(spec)
		}
		appliedKey := types.NamespacedName{Namespace: key.Namespace, Name: "applied"}
		get := func() *cachev1alpha1.Memcached {
			GinkgoHelper()
			m := &cachev1alpha1.Memcached{}
			Expect(k8sClient.Get(ctx, appliedKey, m)).To(Succeed())
			return m
		}
		out, err := w.EnsureApplyConfiguration(ctx, applied(3))
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Operation).To(Equal(drift.OperationCreated))
		Expect(*get().Spec.Size).To(Equal(int32(3)))

		By("applying it again: converged, nothing sent")
		rv := get().ResourceVersion
		out, err = w.EnsureApplyConfiguration(ctx, applied(3))
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Operation).To(Equal(drift.OperationUnchanged))
		Expect(get().ResourceVersion).To(Equal(rv))

		By("no longer setting size: released, so the CRD's default comes back")
		out, err = w.EnsureApplyConfiguration(ctx, applied())
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Operation).To(Equal(drift.OperationUpdated))
		Expect(out.Drift.Paths).To(Equal([]string{"spec.size"}))
		Expect(*get().Spec.Size).To(Equal(int32(1)))
		rv = get().ResourceVersion
		out, err = w.EnsureApplyConfiguration(ctx, applied())
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Operation).To(Equal(drift.OperationUnchanged))
		Expect(get().ResourceVersion).To(Equal(rv))
	})

	It("leaves a suspended Memcached's Deployment as edited, and repairs it in the reconcile that resumes it", func() {
		reconcileOnce()
		reconcileOnce()

		By("suspending it, as a user: spec.suspend")
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		memc.Spec.Suspend = true
		Expect(k8sClient.Update(ctx, memc)).To(Succeed())
		reconcileOnce()
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(meta.IsStatusConditionTrue(memc.Status.Conditions, "Suspended")).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(memc.Status.Conditions, "Available")).To(BeTrue(), "Available stays as it was")

		By("scaling the Deployment by hand: it stays scaled")
		dep := deployment()
		dep.Spec.Replicas = ptr.To(int32(3))
		Expect(k8sClient.Update(ctx, dep)).To(Succeed())
		reconcileOnce()
		reconcileOnce()
		Expect(*deployment().Spec.Replicas).To(Equal(int32(3)))

		By("resuming: one reconcile puts the size back")
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		memc.Spec.Suspend = false
		Expect(k8sClient.Update(ctx, memc)).To(Succeed())
		reconcileOnce()
		Expect(*deployment().Spec.Replicas).To(Equal(int32(1)))
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(meta.FindStatusCondition(memc.Status.Conditions, "Suspended")).To(BeNil())
	})

	It("runs the finalizer of a suspended Memcached on deletion", func() {
		reconcileOnce()
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(memc.Finalizers).To(ContainElement(memcachedFinalizer))
		memc.Annotations = map[string]string{suspend.Annotation: "true"}
		Expect(k8sClient.Update(ctx, memc)).To(Succeed())
		reconcileOnce()
		Expect(k8sClient.Delete(ctx, memc)).To(Succeed())
		reconcileOnce()
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, memc))).To(BeTrue(), "the finalizer ran and the Memcached went")
	})

	It("records a reconcile request it handled, in the status write of the outcome", func() {
		reconcileOnce()
		reconcileOnce()
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		memc.Annotations = map[string]string{request.Annotation: "2026-11-25T10:00:00Z"}
		Expect(k8sClient.Update(ctx, memc)).To(Succeed())
		reconcileOnce()
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(memc.Status.LastHandledReconcileAt).To(Equal("2026-11-25T10:00:00Z"))
		rv := memc.ResourceVersion
		reconcileOnce()
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(memc.ResourceVersion).To(Equal(rv), "a request already handled costs nothing")
	})

	It("stalls, Degraded, without retrying when the operator has no image", func() {
		Expect(os.Unsetenv("MEMCACHED_IMAGE")).To(Succeed())
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		Expect(err).To(HaveOccurred())
		Expect(err).To(MatchError(reconcile.TerminalError(nil)), "a permanent error is terminal: not retried")
		Expect(k8sClient.Get(ctx, key, memc)).To(Succeed())
		Expect(meta.IsStatusConditionTrue(memc.Status.Conditions, "Stalled")).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(memc.Status.Conditions, "Degraded")).To(BeTrue())
		Expect(meta.IsStatusConditionFalse(memc.Status.Conditions, "Available")).To(BeTrue())
	})
})
