// Command cmpoptions is the control of TestBinaryLetsTheLinkerDropUnusedMethods:
// a program that asks compare.Diff for go-cmp options, and so links
// go-cmp's reflective method lookups.
package main

import (
	"fmt"

	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reconcilekit/reconcilekit/compare"
)

func main() {
	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}
	c, err := compare.Diff(desired, &corev1.ConfigMap{}, compare.CmpOptions(cmpopts.EquateEmpty()))
	fmt.Println(c.Paths, err)
}
