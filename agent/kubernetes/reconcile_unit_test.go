package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

// managedFields as the API server writes them after the backend applied a quota and
// kubectl edit changed requests.cpu, and after someone changed one limit of a
// ClusterQueue, whose resourceGroups list is atomic.
func TestOwnershipIsReadFromManagedFields(t *testing.T) {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:spec":{"f:hard":{"f:requests.memory":{}},"f:scopeSelector":{}}}`),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:hard":{"f:requests.cpu":{}}}}`),
		entry(FieldManager, metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:hard":{"f:requests.cpu":{}}}}`), // an update is not the backend's apply
	}}}
	for _, c := range []struct {
		path []string
		own  bool
	}{
		{[]string{"f:spec", "f:hard", "f:requests.memory"}, true},
		{[]string{"f:spec", "f:hard", "f:requests.cpu"}, false},
		{[]string{"f:spec", "f:hard", "f:requests.nvidia.com/gpu"}, false},
		{[]string{"f:spec", "f:scopeSelector", "f:matchExpressions"}, true}, // an atomic ancestor
	} {
		if got := ownsField(q, FieldManager, c.path...); got != c.own {
			t.Errorf("ownsField(%v) = %v, want %v", c.path, got, c.own)
		}
	}
	if got := otherOwners(q, FieldManager, "f:spec", "f:hard", "f:requests.cpu"); got != "kubectl-edit Update, clearhouse Update" {
		t.Errorf("otherOwners = %q", got)
	}
	if got := otherOwners(q, FieldManager, "f:spec", "f:hard", "f:requests.memory"); got != "an unknown writer" {
		t.Errorf("otherOwners of the backend's own field = %q", got)
	}
	cq := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:cohortName":{},"f:namespaceSelector":{}}}`),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:resourceGroups":{}}}`),
	}}
	if ownsField(cq, FieldManager, "f:spec", "f:resourceGroups") {
		t.Errorf("the backend owns resourceGroups that kubectl-edit took")
	}
	if !ownsField(cq, FieldManager, "f:spec", "f:cohortName") {
		t.Errorf("the backend does not own its cohortName")
	}
}
