// Command onnxconf runs ONNX's backend test data through tgc and prints
// (or writes into docs/onnx.md) the conformance table.
//
//	go run ./tools/onnxconf                  # every case on CPU, summary and failures
//	go run ./tools/onnxconf -md docs/onnx.md # regenerate the table in the docs
//	go run ./tools/onnxconf -expect pkg/onnx/conform/testdata/expected.txt
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"

	"tgc/pkg/onnx/conform"
	"tgc/pkg/realize"
)

func main() {
	root := flag.String("root", conform.DefaultRoot, "the test data (Debian: libonnx-testdata)")
	device := flag.String("device", "CPU", "device to run on")
	run := flag.String("run", "", "only cases whose group/name matches this regexp")
	md := flag.String("md", "", "rewrite the conformance section of this markdown file")
	expect := flag.String("expect", "", "write the expectations file of the Go test (every case that does not pass)")
	verbose := flag.Bool("v", false, "print every case")
	opsOnly := flag.Bool("ops", false, "with -md: rewrite only the operator table (runs no case)")
	flag.Parse()
	if *opsOnly && *md != "" {
		if err := writeOperators(*md); err != nil {
			fmt.Fprintln(os.Stderr, "onnxconf:", err)
			os.Exit(1)
		}
		return
	}
	if err := mainErr(*root, *device, *run, *md, *expect, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "onnxconf:", err)
		os.Exit(1)
	}
}

func mainErr(root, device, run, md, expect string, verbose bool) error {
	cases, err := conform.Cases(root, conform.Groups...)
	if err != nil {
		return err
	}
	var re *regexp.Regexp
	if run != "" {
		if re, err = regexp.Compile(run); err != nil {
			return err
		}
	}
	e, err := realize.Open(device, realize.Options{})
	if err != nil {
		return err
	}
	var outs []conform.Outcome
	for _, c := range cases {
		if re != nil && !re.MatchString(c.Group+"/"+c.Name) {
			continue
		}
		o := conform.Run(e, c)
		if verbose || o.Status == conform.Fail || (o.Status == conform.Refused && !o.ByDesign()) {
			fmt.Printf("%-8s %s/%s %s %s\n", o.Status, c.Group, c.Name, o.Category, o.Reason)
		}
		outs = append(outs, o)
	}
	t := conform.Summarize(outs)
	fmt.Print(t.Text())
	if expect != "" {
		if err := conform.WriteExpectations(expect, outs); err != nil {
			return err
		}
	}
	if md != "" {
		if err := writeOperators(md); err != nil {
			return err
		}
		return conform.WriteMarkdown(md, device, t)
	}
	return nil
}
