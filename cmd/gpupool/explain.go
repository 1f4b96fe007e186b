// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpupool/gpupool/e2e/autoscaler"
	"github.com/gpupool/gpupool/e2e/explain"
	"github.com/gpupool/gpupool/e2e/fleet"
)

// explainCommand says why a pod is Pending in the pool contract's terms.
func explainCommand() *cobra.Command {
	c := &cobra.Command{Use: "explain NAMESPACE/POD", Short: "say why a pod is Pending, in the pool contract's terms", Args: cobra.ExactArgs(1)}
	fs := c.Flags()
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (default $KUBECONFIG; 'gpupool up' prints one)")
	fleetFile := fs.String("fleet", "", "the fleet the cluster runs: its autoscaled pools' instance types are what the autoscaler may buy, so a Pending pod is also explained in the autoscaler's terms (default: the nodes alone)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		ns, name, ok := strings.Cut(args[0], "/")
		if !ok || ns == "" || name == "" {
			return fmt.Errorf("want NAMESPACE/POD, got %q", args[0])
		}
		if *kubeconfig == "" {
			// client-go would try the in-cluster config, then suggest
			// KUBERNETES_MASTER: neither is what a user here means.
			return errors.New("no cluster to explain: give --kubeconfig or set $KUBECONFIG ('gpupool up' prints one)")
		}
		rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
		if err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != "" {
			fmt.Printf("%s/%s is not Pending: it is bound to node %s (phase %s)\n", ns, name, pod.Spec.NodeName, pod.Status.Phase)
			return nil
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		dra, err := explain.LoadDRA(ctx, cs)
		if err != nil {
			return err
		}
		var nodePools []explain.NodePool
		if *fleetFile != "" {
			f, err := fleet.Load(*fleetFile)
			if err != nil {
				return fmt.Errorf("--fleet: %w", err)
			}
			cloud, err := autoscaler.NewCloud(f)
			if err != nil {
				return fmt.Errorf("--fleet: %w", err)
			}
			dyn, err := dynamic.NewForConfig(rc)
			if err != nil {
				return err
			}
			if nodePools, err = autoscaler.NodePools(ctx, dyn, cloud.InstanceTypes(), autoscaler.OverlayGateUnknown); err != nil {
				return err
			}
		}
		reason := explain.Pod(pod, explain.Cluster{Nodes: nodes.Items, Pods: pods.Items, DRA: dra, NodePools: nodePools})
		fmt.Printf("%s/%s is Pending\n  contract: %s\n  reason:   %s\n", ns, name, reason.Category, reason.Message)
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Message != "" {
				fmt.Printf("  scheduler: %s\n", c.Message)
			}
		}
		if reason.Category == explain.Unexplained {
			return exitError{1}
		}
		return nil
	}
	return c
}
