package controller

import (
	nodev1 "k8s.io/api/node/v1"
)

func handlerOf(obj any) string {
	if rc, ok := obj.(*nodev1.RuntimeClass); ok {
		return rc.Handler
	}
	return ""
}
