// Package nnlib binds tgc's nn package to .tg scripts: the module nn with
// its layers (callable objects whose tensors are attributes), optimizers,
// nn.state (safetensors, state dicts) and nn.datasets (MNIST).
package nnlib

import (
	"go.starlark.net/starlark"

	"tgc/pkg/script/pyrt"
)

// Module is the predeclared name nn.
var Module = pyrt.NewModule("nn", starlark.StringDict{
	"Linear":      pyrt.Builtin("Linear", linearFn),
	"Conv2d":      pyrt.Builtin("Conv2d", conv2dFn),
	"BatchNorm":   pyrt.Builtin("BatchNorm", batchNormFn),
	"BatchNorm2d": pyrt.Builtin("BatchNorm2d", batchNormFn),
	"LayerNorm":   pyrt.Builtin("LayerNorm", layerNormFn),
	"RMSNorm":     pyrt.Builtin("RMSNorm", rmsNormFn),
	"Embedding":   pyrt.Builtin("Embedding", embeddingFn),
	"optim": pyrt.NewModule("nn.optim", starlark.StringDict{
		"SGD":   pyrt.Builtin("SGD", optimFn("SGD")),
		"Adam":  pyrt.Builtin("Adam", optimFn("Adam")),
		"AdamW": pyrt.Builtin("AdamW", optimFn("AdamW")),
	}),
	"state": pyrt.NewModule("nn.state", starlark.StringDict{
		"safe_load":       pyrt.Builtin("safe_load", safeLoad),
		"safe_save":       pyrt.Builtin("safe_save", safeSave),
		"get_state_dict":  pyrt.Builtin("get_state_dict", getStateDict),
		"get_parameters":  pyrt.Builtin("get_parameters", getParameters),
		"load_state_dict": pyrt.Builtin("load_state_dict", loadStateDict),
		"gguf_load":       pyrt.Builtin("gguf_load", ggufLoad),
		"llama2c_load":    pyrt.Builtin("llama2c_load", llama2cLoad),
		"tokenizer":       pyrt.Builtin("tokenizer", tokenizerFn),
	}),
	"onnx": onnxModule,
	"datasets": pyrt.NewModule("nn.datasets", starlark.StringDict{
		"mnist": pyrt.Builtin("mnist", mnistFn),
	}),
})
