package onnx

var nnOps = map[string]opDef{}
var indexOps = map[string]opDef{}
var miscOps = map[string]opDef{}
