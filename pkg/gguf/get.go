package gguf

import (
	"errors"
	"fmt"
)

// ErrMissing is wrapped by the getters' error for a key the file lacks.
var ErrMissing = errors.New("missing")

// The getters return a metadata value converted to a Go type, or an error
// naming the file and the key (wrapping ErrMissing when the key is absent).

func (f *File) get(key string) (Value, error) {
	v, ok := f.Lookup(key)
	if !ok {
		return Value{}, fmt.Errorf("gguf: %s: metadata %q: %w", f.Name, key, ErrMissing)
	}
	return v, nil
}

func (f *File) typeErr(key string, v Value, want string) error {
	if a, ok := v.Data.(Array); ok {
		return fmt.Errorf("gguf: %s: metadata %q: has type array of %v, want %s", f.Name, key, a.Elem, want)
	}
	return fmt.Errorf("gguf: %s: metadata %q: has type %v, want %s", f.Name, key, v.Type, want)
}

// GetString returns a string value.
func (f *File) GetString(key string) (string, error) {
	v, err := f.get(key)
	if err != nil {
		return "", err
	}
	s, ok := v.Data.(string)
	if !ok {
		return "", f.typeErr(key, v, "string")
	}
	return s, nil
}

// GetInt returns an integer value of any integer type.
func (f *File) GetInt(key string) (int64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	n, ok := asInt(v)
	if !ok {
		return 0, f.typeErr(key, v, "an integer")
	}
	return n, nil
}

// GetFloat returns a float32 or float64 value.
func (f *File) GetFloat(key string) (float64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	switch x := v.Data.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, f.typeErr(key, v, "a float")
}

// GetBool returns a bool value.
func (f *File) GetBool(key string) (bool, error) {
	v, err := f.get(key)
	if err != nil {
		return false, err
	}
	b, ok := v.Data.(bool)
	if !ok {
		return false, f.typeErr(key, v, "bool")
	}
	return b, nil
}

func (f *File) getArray(key string) (Array, Value, error) {
	v, err := f.get(key)
	if err != nil {
		return Array{}, v, err
	}
	a, _ := v.Data.(Array)
	return a, v, nil
}

// GetStrings returns an array of strings.
func (f *File) GetStrings(key string) ([]string, error) {
	a, v, err := f.getArray(key)
	if err != nil {
		return nil, err
	}
	s, ok := a.Values.([]string)
	if !ok {
		return nil, f.typeErr(key, v, "array of string")
	}
	return s, nil
}

// GetFloat32s returns an array of float32.
func (f *File) GetFloat32s(key string) ([]float32, error) {
	a, v, err := f.getArray(key)
	if err != nil {
		return nil, err
	}
	s, ok := a.Values.([]float32)
	if !ok {
		return nil, f.typeErr(key, v, "array of float32")
	}
	return s, nil
}

// GetInts returns an array of any integer type as int64.
func (f *File) GetInts(key string) ([]int64, error) {
	a, v, err := f.getArray(key)
	if err != nil {
		return nil, err
	}
	s, ok := ints(a)
	if !ok {
		return nil, f.typeErr(key, v, "array of integers")
	}
	return s, nil
}
