// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package draplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpupool/gpupool/fakegpu"
)

const node = "kind-control-plane"

// A node annotated as a DRA node of 2 H100s.
var draNode = map[string]string{fakegpu.AnnotationSKU: "h100-80gb", fakegpu.AnnotationGPUs: "2", fakegpu.AnnotationDRA: fakegpu.DRAWholeGPU}

func newDriver(t *testing.T, dir string, objs ...*corev1.Pod) (*Driver, *kubefake.Clientset) {
	t.Helper()
	cs := kubefake.NewClientset()
	for _, p := range objs {
		_, err := cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	d, err := New(Options{Node: node, Client: cs, StateFile: filepath.Join(dir, "prepared.json"), CDIDir: filepath.Join(dir, "cdi"), Log: t.Logf})
	require.NoError(t, err)
	specs, down := SlicesFor(node, nil, nil, draNode)
	require.Empty(t, down)
	d.SetPublished(specs)
	return d, cs
}

func claim(uid, name string, pod string, devices ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID(uid)}}
	c.Status.Allocation = &resourcev1.AllocationResult{}
	for _, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: fakegpu.DRADriver, Pool: node, Device: d})
	}
	if pod != "" {
		c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: "pod-uid"}}
	}
	return c
}

const uid1, uid2 = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"

// The driver publishes what the simulated driver publishes for a KWOK
// node with the same annotations, and nothing for a node not served by DRA.
func TestSlicesFollowTheModel(t *testing.T) {
	specs, down := SlicesFor(node, nil, nil, draNode)
	require.Empty(t, down)
	res := Resources(node, specs)
	require.Len(t, res.Pools, 1)
	assert.Len(t, res.Pools[node].Slices[0].Devices, 2, "gpu-0 and gpu-1")

	_, down = SlicesFor(node, nil, nil, map[string]string{fakegpu.AnnotationSKU: "h100-80gb", fakegpu.AnnotationGPUs: "2"})
	assert.Contains(t, down, "not served by DRA")
	assert.Empty(t, Resources(node, nil).Pools, "no pool: the helper removes the node's slices")
	_, down = SlicesFor(node, nil, nil, map[string]string{fakegpu.AnnotationDRA: fakegpu.DRAWholeGPU})
	assert.Contains(t, down, "no fakegpu GPU inventory")
}

// dra-facts §4: one entry per allocated device, CDI ids
// k8s.gpu.nvidia.com/claim=<claimUID>-<device>; a CDI spec per claim, and
// the ids recorded on the pod the claim is reserved for.
func TestPrepareAnswersAsTheDriver(t *testing.T) {
	dir := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"}}
	d, cs := newDriver(t, dir, pod)
	res, err := d.PrepareResourceClaims(context.Background(), []*resourcev1.ResourceClaim{claim(uid1, "c1", "p", "gpu-0", "gpu-1")})
	require.NoError(t, err)
	require.NoError(t, res[uid1].Err)
	require.Len(t, res[uid1].Devices, 2)
	assert.Equal(t, kubeletplugin.Device{Requests: []string{"gpu"}, PoolName: node, DeviceName: "gpu-0",
		CDIDeviceIDs: []string{"k8s.gpu.nvidia.com/claim=" + uid1 + "-gpu-0"}}, res[uid1].Devices[0])

	data, err := os.ReadFile(filepath.Join(dir, "cdi", "k8s.gpu.nvidia.com-claim_"+uid1+".json"))
	require.NoError(t, err)
	var spec cdispec.Spec
	require.NoError(t, json.Unmarshal(data, &spec))
	assert.Equal(t, "k8s.gpu.nvidia.com/claim", spec.Kind)
	require.Len(t, spec.Devices, 2)
	assert.Equal(t, uid1+"-gpu-0", spec.Devices[0].Name, "the CDI id's name part")

	got, err := cs.CoreV1().Pods("team-a").Get(context.Background(), "p", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "k8s.gpu.nvidia.com/claim="+uid1+"-gpu-0,k8s.gpu.nvidia.com/claim="+uid1+"-gpu-1", got.Annotations[fakegpu.AnnotationCDIDevices])

	// Idempotent: the kubelet asks again after a restart.
	again, err := d.PrepareResourceClaims(context.Background(), []*resourcev1.ResourceClaim{claim(uid1, "c1", "p", "gpu-0", "gpu-1")})
	require.NoError(t, err)
	assert.Equal(t, res, again)
}

// A device the node no longer publishes, or one another claim holds, fails
// the claim, not the call: the kubelet retries it alone.
func TestPrepareRefusesGoneAndHeldDevices(t *testing.T) {
	d, _ := newDriver(t, t.TempDir())
	res, err := d.PrepareResourceClaims(context.Background(), []*resourcev1.ResourceClaim{
		claim(uid1, "c1", "", "gpu-0"),
		claim(uid2, "c2", "", "gpu-0"),
		claim("33333333-3333-3333-3333-333333333333", "c3", "", "gpu-7"),
	})
	require.NoError(t, err)
	assert.NoError(t, res[uid1].Err)
	assert.ErrorContains(t, res[uid2].Err, `device "gpu-0" is already prepared for claim team-a/c1`)
	assert.ErrorContains(t, res["33333333-3333-3333-3333-333333333333"].Err, `device "gpu-7" of pool "kind-control-plane" is not published`)
}

// Unprepare undoes prepare, also in a later process (the state file), and
// is fine with a claim it never prepared.
func TestUnprepareSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	d, _ := newDriver(t, dir)
	_, err := d.PrepareResourceClaims(context.Background(), []*resourcev1.ResourceClaim{claim(uid1, "c1", "", "gpu-0")})
	require.NoError(t, err)

	restarted, _ := newDriver(t, dir)
	assert.Contains(t, restarted.Prepared(), types.UID(uid1))
	out, err := restarted.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{
		{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "c1"}, UID: uid1},
		{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "never"}, UID: uid2},
	})
	require.NoError(t, err)
	assert.Equal(t, map[types.UID]error{uid1: nil, uid2: nil}, out)
	assert.Empty(t, restarted.Prepared())
	_, err = os.Stat(filepath.Join(dir, "cdi", "k8s.gpu.nvidia.com-claim_"+uid1+".json"))
	assert.True(t, os.IsNotExist(err), "the claim's CDI spec is removed")

	// The device is free again.
	res, err := restarted.PrepareResourceClaims(context.Background(), []*resourcev1.ResourceClaim{claim(uid2, "c2", "", "gpu-0")})
	require.NoError(t, err)
	assert.NoError(t, res[uid2].Err)
}

// A lost spec comes back on the kubelet's next prepare, and unprepare
// removes a claim's spec even when the state forgot the claim.
func TestCDISpecsFollowTheKubelet(t *testing.T) {
	dir := t.TempDir()
	d, _ := newDriver(t, dir)
	spec := filepath.Join(dir, "cdi", "k8s.gpu.nvidia.com-claim_"+uid1+".json")
	_, err := d.PrepareResourceClaims(context.Background(), []*resourcev1.ResourceClaim{claim(uid1, "c1", "", "gpu-0")})
	require.NoError(t, err)
	require.NoError(t, os.Remove(spec)) // a node restart empties /var/run
	_, err = d.PrepareResourceClaims(context.Background(), []*resourcev1.ResourceClaim{claim(uid1, "c1", "", "gpu-0")})
	require.NoError(t, err)
	assert.FileExists(t, spec)

	require.NoError(t, os.Remove(filepath.Join(dir, "prepared.json")))
	forgetful, _ := newDriver(t, dir)
	_, err = forgetful.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "c1"}, UID: uid1}})
	require.NoError(t, err)
	assert.NoFileExists(t, spec)
}

// An error the helper cannot recover from (its gRPC server stopped) is
// fatal; a publishing error is only logged (the helper retries).
func TestHandleErrorStopsOnlyOnFatalErrors(t *testing.T) {
	var fatal []error
	d, err := New(Options{Node: node, StateFile: filepath.Join(t.TempDir(), "s.json"), Log: t.Logf, Fatal: func(err error) { fatal = append(fatal, err) }})
	require.NoError(t, err)
	d.HandleError(context.Background(), fmt.Errorf("wrapped: %w", kubeletplugin.ErrRecoverable), "publishing slices")
	assert.Empty(t, fatal)
	d.HandleError(context.Background(), errors.New("listener closed"), "DRA gRPC server")
	require.Len(t, fatal, 1)
	assert.ErrorContains(t, fatal[0], "DRA gRPC server: listener closed")
}
