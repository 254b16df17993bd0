package onnx

var indexOps = map[string]opDef{}
var miscOps = map[string]opDef{}
