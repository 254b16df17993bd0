package pyrt

import (
	"fmt"

	"go.starlark.net/starlark"
)

// Module is a read-only module-like value (dtypes, nn, nn.state, ...) with
// helpful attribute errors.
type Module struct {
	name    string
	members starlark.StringDict
}

// NewModule makes a module; members must not change afterwards.
func NewModule(name string, members starlark.StringDict) *Module {
	return &Module{name: name, members: members}
}

func (m *Module) String() string        { return "<module " + m.name + ">" }
func (m *Module) Type() string          { return "module" }
func (m *Module) Freeze()               { m.members.Freeze() }
func (m *Module) Truth() starlark.Bool  { return starlark.True }
func (m *Module) Hash() (uint32, error) { return starlark.String(m.name).Hash() }
func (m *Module) AttrNames() []string   { return m.members.Keys() }

// Name is the module's dotted name.
func (m *Module) Name() string { return m.name }

func (m *Module) Attr(name string) (starlark.Value, error) {
	if v, ok := m.members[name]; ok {
		return v, nil
	}
	if name == "load_" { // the frontend's spelling of Python's .load (frontend.LoadAttr)
		if v, ok := m.members["load"]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%s", UnknownAttr(m.name, "attribute", name, m.members.Keys()))
}
