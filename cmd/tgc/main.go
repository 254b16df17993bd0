// Command tgc compiles and runs .tg tensor scripts. See `tgc --help`.
package main

import "os"

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}
