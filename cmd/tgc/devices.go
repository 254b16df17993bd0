package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/spf13/cobra"

	"tgc/pkg/backend"
	"tgc/pkg/realize"
)

func newDevicesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List devices, which one is the default, and why others are unavailable",
		Args:  cobra.NoArgs,
		RunE:  listDevices,
	}
}

// deviceRow is one line of the table.
type deviceRow struct {
	name, status, details string
	state                 int // 0 available, 1 unavailable, 2 emit only
	isDefault             bool
}

func deviceRows() []deviceRow {
	def := backend.Default()
	var rows []deviceRow
	for _, d := range backend.List() {
		r := deviceRow{name: d.Name, details: d.Reason, isDefault: d.Name == def}
		if d.Available {
			r.status = "available"
		} else {
			r.status, r.state = "unavailable", 1
		}
		if d.Name == "GO" && r.details == "" {
			r.details = "pure-Go interpreter"
		}
		rows = append(rows, r)
	}
	for _, name := range realize.EmitDevices() {
		if slices.ContainsFunc(rows, func(r deviceRow) bool { return r.name == name }) {
			continue
		}
		rows = append(rows, deviceRow{name: name, status: "emit only", state: 2,
			details: fmt.Sprintf("renders kernels, cannot run them here: tgc emit --device %s", name)})
	}
	for i := range rows {
		if rows[i].isDefault {
			rows[i].status += " (default)"
		}
	}
	return rows
}

func listDevices(c *cobra.Command, _ []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	rows := deviceRows()
	if useColor(w, cfg.NoColor) {
		fmt.Fprintln(w, styledTable(w, rows))
	} else {
		plainTable(w, rows)
	}
	if cfg.Device != "" {
		fmt.Fprintf(w, "tgc run uses %s (from %s)\n", cfg.Device, cfg.From["device"])
	} else {
		for _, r := range rows {
			if r.state == 1 {
				fmt.Fprintf(w, "tgc run uses %s: the best available device\n", backend.Default())
				break
			}
		}
	}
	return nil
}

func plainTable(w io.Writer, rows []deviceRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tSTATUS\tDETAILS")
	for _, r := range rows {
		name := r.name
		if r.isDefault {
			name += " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, r.status, oneLine(r.details))
	}
	tw.Flush()
}

func styledTable(w io.Writer, rows []deviceRow) string {
	re := lipgloss.NewRenderer(w)
	header := re.NewStyle().Bold(true).Padding(0, 1)
	cell := re.NewStyle().Padding(0, 1)
	colors := []lipgloss.Color{"2", "1", "3"} // green, red, yellow
	t := table.New().
		Border(lipgloss.RoundedBorder()).
		BorderStyle(re.NewStyle().Foreground(lipgloss.Color("8"))).
		Headers("device", "status", "details").
		StyleFunc(func(row, col int) lipgloss.Style {
			if row == table.HeaderRow {
				return header
			}
			r := rows[row]
			switch col {
			case 0:
				if r.isDefault {
					return cell.Bold(true)
				}
			case 1:
				return cell.Foreground(colors[r.state])
			case 2:
				if r.state != 0 {
					return cell.Faint(true)
				}
			}
			return cell
		})
	for _, r := range rows {
		name := r.name
		if r.isDefault {
			name += " *"
		}
		t.Row(name, r.status, oneLine(r.details))
	}
	return t.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
