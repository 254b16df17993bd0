package pyrt

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync/atomic"

	"go.starlark.net/starlark"

	"tgc/pkg/script/frontend"
)

// Classes. The frontend turns a class statement into a call of MakeClass
// with the class's name, its bases and its members (functions and
// constants). A class is callable: it makes an Instance and runs __init__.
// An instance holds attributes set on it at any time; looking up a name it
// does not hold finds the class's member, with functions bound to the
// instance (a method), as in Python.

var ids atomic.Uint32

func nextID() uint32 { return ids.Add(1) }

// Class is a class defined by a script.
type Class struct {
	name    string
	base    *Class
	members map[string]starlark.Value
	order   []string
	thread  *starlark.Thread // the run's thread, for properties and __enter__
	id      uint32
}

var (
	_ starlark.Callable    = (*Class)(nil)
	_ starlark.HasAttrs    = (*Class)(nil)
	_ starlark.HasSetField = (*Class)(nil)
)

// MakeClass is the builtin behind a class statement:
// __tgclass__(name, bases, members).
func MakeClass(c *Call) (starlark.Value, error) {
	var name string
	var bases starlark.Tuple
	var members *starlark.Dict
	if err := c.Unpack("name", &name, "bases", &bases, "members", &members); err != nil {
		return nil, err
	}
	cl := &Class{name: name, members: map[string]starlark.Value{}, thread: c.Thread, id: nextID()}
	for _, b := range bases {
		switch b := b.(type) {
		case *Class:
			if cl.base != nil {
				return nil, fmt.Errorf("class %s: more than one base class is not supported", name)
			}
			cl.base = b
		case objectType:
		case *ExceptionClass:
			return nil, fmt.Errorf("class %s: subclassing %s is not supported: raise a builtin exception, e.g. raise ValueError(\"...\")", name, b.name)
		default:
			return nil, fmt.Errorf("class %s: the base %s is a %s, not a class defined in the script", name, b, b.Type())
		}
	}
	for _, kv := range members.Items() {
		k, _ := starlark.AsString(kv[0])
		if _, unset := kv[1].(unsetValue); unset {
			continue
		}
		cl.members[k] = kv[1]
		cl.order = append(cl.order, k)
	}
	return cl, nil
}

func (cl *Class) String() string        { return "<class " + cl.name + ">" }
func (cl *Class) Type() string          { return "type" }
func (cl *Class) Name() string          { return cl.name }
func (cl *Class) Freeze()               {}
func (cl *Class) Truth() starlark.Bool  { return starlark.True }
func (cl *Class) Hash() (uint32, error) { return cl.id, nil }

// lookup finds a member in the class or its bases.
func (cl *Class) lookup(name string) (starlark.Value, bool) {
	for c := cl; c != nil; c = c.base {
		if v, ok := c.members[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// names lists the members of the class and its bases.
func (cl *Class) names() []string {
	var out []string
	for c := cl; c != nil; c = c.base {
		out = append(out, c.order...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// subclassOf reports whether cl is base or derives from it.
func (cl *Class) subclassOf(base *Class) bool {
	for c := cl; c != nil; c = c.base {
		if c == base {
			return true
		}
	}
	return false
}

func (cl *Class) AttrNames() []string { return append(cl.names(), "__name__") }

// Attr is a member looked up on the class: functions unbound (Python 3),
// classmethods bound to the class.
func (cl *Class) Attr(name string) (starlark.Value, error) {
	if name == "__name__" {
		return starlark.String(cl.name), nil
	}
	v, ok := cl.lookup(name)
	if !ok {
		return nil, fmt.Errorf("%s", UnknownAttr("class "+cl.name, "attribute", name, cl.names()))
	}
	switch m := v.(type) {
	case *staticMethod:
		return m.fn, nil
	case *classMethod:
		return &BoundMethod{self: cl, fn: m.fn}, nil
	}
	return v, nil
}

// SetField sets a class member (Model.count = 0).
func (cl *Class) SetField(name string, v starlark.Value) error {
	if _, ok := cl.members[name]; !ok {
		cl.order = append(cl.order, name)
	}
	cl.members[name] = v
	return nil
}

// CallInternal makes an instance and runs __init__.
func (cl *Class) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	inst := &Instance{class: cl, fields: map[string]starlark.Value{}, id: nextID()}
	init, ok := cl.lookup("__init__")
	if !ok {
		if len(args) > 0 || len(kwargs) > 0 {
			return nil, fmt.Errorf("%s() takes no arguments (the class has no __init__)", cl.name)
		}
		return inst, nil
	}
	r, err := starlark.Call(th, bind(inst, init), args, kwargs)
	if err != nil {
		return nil, err
	}
	if r != starlark.None {
		return nil, fmt.Errorf("%s.__init__ returned %s; it must return None", cl.name, r.Type())
	}
	return inst, nil
}

// Instance is an object of a script class.
type Instance struct {
	class  *Class
	fields map[string]starlark.Value
	order  []string // field names in the order they were first set
	id     uint32
}

var (
	_ starlark.Callable    = (*Instance)(nil)
	_ starlark.HasAttrs    = (*Instance)(nil)
	_ starlark.HasSetField = (*Instance)(nil)
)

func (o *Instance) String() string        { return "<" + o.class.name + " object>" }
func (o *Instance) Type() string          { return o.class.name }
func (o *Instance) Name() string          { return o.class.name }
func (o *Instance) Freeze()               {}
func (o *Instance) Truth() starlark.Bool  { return starlark.True }
func (o *Instance) Hash() (uint32, error) { return o.id, nil }

// Class is the instance's class.
func (o *Instance) Class() *Class { return o.class }

// Fields lists the attributes set on the instance, in the order they were
// first set, with their values (for nn.state's walk of a model).
func (o *Instance) Fields() ([]string, []starlark.Value) {
	vals := make([]starlark.Value, len(o.order))
	for i, n := range o.order {
		vals[i] = o.fields[n]
	}
	return slices.Clone(o.order), vals
}

func (o *Instance) AttrNames() []string {
	names := append(slices.Clone(o.order), o.class.names()...)
	sort.Strings(names)
	return slices.Compact(names)
}

// Attr is an attribute: the instance's own, else the class's member, a
// function bound to the instance.
func (o *Instance) Attr(name string) (starlark.Value, error) {
	if v, ok := o.fields[name]; ok {
		return v, nil
	}
	if name == "__class__" {
		return o.class, nil
	}
	v, ok := o.class.lookup(name)
	if !ok {
		return nil, fmt.Errorf("%s", UnknownAttr(o.class.name+" object", "attribute", name, o.AttrNames()))
	}
	if p, ok := v.(*property); ok {
		if o.class.thread == nil {
			return nil, fmt.Errorf("%s.%s: a property cannot be read here", o.class.name, name)
		}
		return starlark.Call(o.class.thread, p.fget, starlark.Tuple{o}, nil)
	}
	return bind(o, v), nil
}

func (o *Instance) SetField(name string, v starlark.Value) error {
	if p, ok := o.class.lookupProperty(name); ok {
		return fmt.Errorf("cannot set %s.%s: it is a property (%s)", o.class.name, name, p)
	}
	if _, ok := o.fields[name]; !ok {
		o.order = append(o.order, name)
	}
	o.fields[name] = v
	return nil
}

func (cl *Class) lookupProperty(name string) (*property, bool) {
	v, ok := cl.lookup(name)
	if !ok {
		return nil, false
	}
	p, ok := v.(*property)
	return p, ok
}

// CallInternal calls __call__.
func (o *Instance) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, ok := o.class.lookup("__call__")
	if !ok {
		return nil, fmt.Errorf("a %s object is not callable (the class has no __call__)", o.class.name)
	}
	return starlark.Call(th, bind(o, v), args, kwargs)
}

// Binder is a class member that binds to an instance when looked up on it,
// like a function becomes a method (TinyJit, a function wrapped by a
// context-manager decorator, staticmethod, classmethod).
type Binder interface {
	Bind(self starlark.Value) starlark.Value
}

// bind is a class member as seen through an instance.
func bind(self *Instance, v starlark.Value) starlark.Value {
	switch m := v.(type) {
	case *starlark.Function:
		return &BoundMethod{self: self, fn: m}
	case *classMethod:
		return &BoundMethod{self: self.class, fn: m.fn}
	case Binder:
		return m.Bind(self)
	}
	return v
}

// BoundMethod is a function with its first argument (self) given.
type BoundMethod struct {
	self starlark.Value
	fn   starlark.Callable
}

// NewBoundMethod binds fn's first argument.
func NewBoundMethod(self starlark.Value, fn starlark.Callable) *BoundMethod {
	return &BoundMethod{self: self, fn: fn}
}

var _ starlark.Callable = (*BoundMethod)(nil)

func (m *BoundMethod) String() string {
	return fmt.Sprintf("<bound method %s of %s>", m.Name(), m.self)
}
func (m *BoundMethod) Type() string         { return "method" }
func (m *BoundMethod) Name() string         { return frontend.DisplayName(m.fn.Name()) }
func (m *BoundMethod) Freeze()              {}
func (m *BoundMethod) Truth() starlark.Bool { return starlark.True }
func (m *BoundMethod) Hash() (uint32, error) {
	h, err := m.fn.Hash()
	if err != nil {
		return 0, err
	}
	s, err := m.self.Hash()
	return h ^ s*31, err
}

func (m *BoundMethod) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return starlark.Call(th, m.fn, append(starlark.Tuple{m.self}, args...), kwargs)
}

// DisplayName is the name of a callable as the script wrote it.
func DisplayName(c starlark.Callable) string { return frontend.DisplayName(c.Name()) }

// Super is super() in a method of cls: the members of cls's base, bound to
// self.
func Super(c *Call) (starlark.Value, error) {
	var cls, self starlark.Value
	if err := c.Unpack("cls", &cls, "self", &self); err != nil {
		return nil, err
	}
	cl, ok := cls.(*Class)
	if !ok {
		return nil, fmt.Errorf("super: %s is not a class", cls.Type())
	}
	inst, ok := self.(*Instance)
	if !ok || !inst.class.subclassOf(cl) {
		return nil, fmt.Errorf("super: the first argument of the method is a %s, not a %s", self.Type(), cl.name)
	}
	return &superProxy{cls: cl, self: inst}, nil
}

type superProxy struct {
	cls  *Class
	self *Instance
}

func (s *superProxy) String() string        { return "<super of " + s.cls.name + ">" }
func (s *superProxy) Type() string          { return "super" }
func (s *superProxy) Freeze()               {}
func (s *superProxy) Truth() starlark.Bool  { return starlark.True }
func (s *superProxy) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: super") }
func (s *superProxy) AttrNames() []string {
	if s.cls.base == nil {
		return []string{"__init__"}
	}
	return s.cls.base.names()
}

func (s *superProxy) Attr(name string) (starlark.Value, error) {
	if s.cls.base != nil {
		if v, ok := s.cls.base.lookup(name); ok {
			return bind(s.self, v), nil
		}
	}
	if name == "__init__" { // object.__init__
		return starlark.NewBuiltin("__init__", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.None, nil
		}), nil
	}
	return nil, fmt.Errorf("%s", UnknownAttr("super() of "+s.cls.name, "attribute", name, s.AttrNames()))
}

// ---- staticmethod, classmethod, property, object ----

type staticMethod struct{ fn starlark.Callable }

func (m *staticMethod) String() string        { return "<staticmethod " + m.fn.Name() + ">" }
func (m *staticMethod) Type() string          { return "staticmethod" }
func (m *staticMethod) Freeze()               {}
func (m *staticMethod) Truth() starlark.Bool  { return starlark.True }
func (m *staticMethod) Hash() (uint32, error) { return m.fn.Hash() }
func (m *staticMethod) Bind(starlark.Value) starlark.Value {
	return m.fn
}

type classMethod struct{ fn starlark.Callable }

func (m *classMethod) String() string        { return "<classmethod " + m.fn.Name() + ">" }
func (m *classMethod) Type() string          { return "classmethod" }
func (m *classMethod) Freeze()               {}
func (m *classMethod) Truth() starlark.Bool  { return starlark.True }
func (m *classMethod) Hash() (uint32, error) { return m.fn.Hash() }

type property struct{ fget starlark.Callable }

func (p *property) String() string        { return "<property " + p.fget.Name() + ">" }
func (p *property) Type() string          { return "property" }
func (p *property) Freeze()               {}
func (p *property) Truth() starlark.Bool  { return starlark.True }
func (p *property) Hash() (uint32, error) { return p.fget.Hash() }

func callableArg(c *Call) (starlark.Callable, error) {
	var fn starlark.Value
	if err := c.Unpack("function", &fn); err != nil {
		return nil, err
	}
	f, ok := fn.(starlark.Callable)
	if !ok {
		return nil, fmt.Errorf("%s: got %s, want a function", c.Name, fn.Type())
	}
	return f, nil
}

// StaticMethod, ClassMethod and Property are the decorators.
func StaticMethod(c *Call) (starlark.Value, error) {
	f, err := callableArg(c)
	if err != nil {
		return nil, err
	}
	return &staticMethod{f}, nil
}

func ClassMethod(c *Call) (starlark.Value, error) {
	f, err := callableArg(c)
	if err != nil {
		return nil, err
	}
	return &classMethod{f}, nil
}

func Property(c *Call) (starlark.Value, error) {
	f, err := callableArg(c)
	if err != nil {
		return nil, err
	}
	return &property{f}, nil
}

// objectType is the name object, a base that adds nothing.
type objectType struct{}

// Object is the predeclared name object.
var Object starlark.Value = objectType{}

func (objectType) String() string        { return "<class object>" }
func (objectType) Type() string          { return "type" }
func (objectType) Freeze()               {}
func (objectType) Truth() starlark.Bool  { return starlark.True }
func (objectType) Hash() (uint32, error) { return 0x0b1ec7, nil }

// unsetValue marks a class member that the class body did not bind.
type unsetValue struct{}

// Unset is the value of frontend.Unset.
var Unset starlark.Value = unsetValue{}

func (unsetValue) String() string        { return "<unset>" }
func (unsetValue) Type() string          { return "unset" }
func (unsetValue) Freeze()               {}
func (unsetValue) Truth() starlark.Bool  { return starlark.False }
func (unsetValue) Hash() (uint32, error) { return 0, nil }

// ---- isinstance, setattr, identity ----

// InstanceChecker is a class-like value that isinstance understands (the
// Tensor class).
type InstanceChecker interface {
	IsInstance(v starlark.Value) bool
}

// IsInstance is isinstance(x, classinfo).
func IsInstance(c *Call) (starlark.Value, error) {
	var x, info starlark.Value
	if err := c.Unpack("obj", &x, "classinfo", &info); err != nil {
		return nil, err
	}
	ok, err := isInstance(x, info)
	return starlark.Bool(ok), err
}

func isInstance(x, info starlark.Value) (bool, error) {
	switch cls := info.(type) {
	case starlark.Tuple:
		for _, c := range cls {
			if ok, err := isInstance(x, c); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	case *Class:
		o, ok := x.(*Instance)
		return ok && o.class.subclassOf(cls), nil
	case objectType:
		return true, nil
	case *ExceptionClass:
		e, ok := x.(*Exception)
		return ok && e.class.subclassOf(cls), nil
	case InstanceChecker:
		return cls.IsInstance(x), nil
	case *starlark.Builtin:
		switch cls.Name() {
		case "int":
			return x.Type() == "int" || x.Type() == "bool", nil
		case "float", "str", "bool", "list", "tuple", "dict", "set", "bytes":
			want := cls.Name()
			if want == "str" {
				want = "string"
			}
			return x.Type() == want, nil
		}
	}
	return false, fmt.Errorf("isinstance: the second argument must be a class or a tuple of classes, got %s", info.Type())
}

// SetAttr is setattr(obj, name, value).
func SetAttr(c *Call) (starlark.Value, error) {
	var x, v starlark.Value
	var name string
	if err := c.Unpack("obj", &x, "name", &name, "value", &v); err != nil {
		return nil, err
	}
	s, ok := x.(starlark.HasSetField)
	if !ok {
		return nil, fmt.Errorf("setattr: a %s has no settable attributes", x.Type())
	}
	return starlark.None, s.SetField(name, v)
}

// Identical is Python's x is y: the same object (None, booleans, numbers
// and strings by value, as CPython's small values behave).
func Identical(x, y starlark.Value) bool {
	switch x.(type) {
	case starlark.NoneType, starlark.Bool, starlark.Int, starlark.Float, starlark.String:
		eq, err := starlark.Equal(x, y)
		return err == nil && eq && x.Type() == y.Type()
	}
	if reflect.TypeOf(x) != reflect.TypeOf(y) {
		return false
	}
	vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
	switch vx.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return vx.Pointer() == vy.Pointer()
	case reflect.Slice:
		return vx.Len() == vy.Len() && (vx.Len() == 0 || vx.Pointer() == vy.Pointer())
	}
	if vx.Comparable() {
		return vx.Equal(vy)
	}
	return false
}
