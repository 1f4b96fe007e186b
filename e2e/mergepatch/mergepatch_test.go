// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package mergepatch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Cases from RFC 7386 appendix A.
func TestApplyRFC7386(t *testing.T) {
	for _, tc := range []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	} {
		var target, patch, want any
		for i, s := range []string{tc.target, tc.patch, tc.want} {
			if err := json.Unmarshal([]byte(s), []*any{&target, &patch, &want}[i]); err != nil {
				t.Fatal(err)
			}
		}
		assert.Equal(t, want, Apply(target, patch), "%s + %s", tc.target, tc.patch)
	}
}
