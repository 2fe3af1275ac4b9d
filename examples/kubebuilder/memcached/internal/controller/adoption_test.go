package controller

// What the port onto reconcilekit adds to the scaffold's behaviour, beside
// the generated tests (which pass unmodified): a Deployment the scaffolded
// controller created is taken over and a port change applied in one write,
// a converged Memcached costs no write, and a missing image stalls it with
// Degraded True.

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
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

	It("takes over the Deployment the scaffolded controller created and applies a port change in one write", func() {
		By("creating the Deployment as the scaffold did: under the manager \"manager\"")
		old, err := r.deploymentForMemcached(memc)
		Expect(err).NotTo(HaveOccurred())
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
