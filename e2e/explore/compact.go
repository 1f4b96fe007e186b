// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package explore

import (
	"bytes"
	"encoding/json"

	"go.yaml.in/yaml/v3"
)

// flowWidth is the longest a flow-style collection may be written on one
// line; longer ones stay in block style.
const flowWidth = 88

// compactYAML writes obj as a person would: small collections of scalars
// on one line (`nodeSelector: {sku: l4, trust: tenant-a}`, `drop: [ALL]`),
// everything else in block style, fields in their API order.
func compactYAML(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, err
	}
	// What the typed structs write for unset fields (null timestamps,
	// empty status and resources) is not what a person writes.
	if j, err = json.Marshal(prune(v)); err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(j, &doc); err != nil {
		return nil, err
	}
	flow(&doc)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// flow marks a collection flow style when everything in it is a scalar or
// already flow (a list: scalars only), and it fits on a line; it returns the width it takes then
// (0: block). JSON input comes styled, so every node is reset first.
func flow(n *yaml.Node) int {
	n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
	switch n.Kind {
	case yaml.DocumentNode:
		// The object itself stays a block, whatever its size.
		for _, root := range n.Content {
			root.Style &^= yaml.FlowStyle
			for _, c := range root.Content {
				flow(c)
			}
		}
		return 0
	case yaml.ScalarNode:
		if n.Tag == "!!str" && needsQuotes(n.Value) {
			n.Style = yaml.DoubleQuotedStyle
			return len(n.Value) + 2
		}
		return len(n.Value)
	}
	width, ok := 2, true
	for _, c := range n.Content {
		w := flow(c)
		// A list of collections stays one item a line.
		if w == 0 || n.Kind == yaml.SequenceNode && c.Kind != yaml.ScalarNode {
			ok = false
		}
		width += w + 2
	}
	if !ok || len(n.Content) == 0 || width > flowWidth {
		return 0
	}
	n.Style |= yaml.FlowStyle
	return width
}

// needsQuotes: strings YAML would read as something else ("1", "true").
func needsQuotes(s string) bool {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return true
	}
	_, isString := v.(string)
	return !isString || v.(string) != s
}

// prune drops nulls and empty objects, bottom up.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			c = prune(c)
			if m, ok := c.(map[string]any); c == nil || ok && len(m) == 0 {
				delete(t, k)
				continue
			}
			t[k] = c
		}
	case []any:
		for i, c := range t {
			t[i] = prune(c)
		}
	}
	return v
}
