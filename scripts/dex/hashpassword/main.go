// Command hashpassword prints the bcrypt hash of each line read from standard input, one a
// line: scripts/oidc hashes its random test users' passwords with it for Dex's staticPasswords.
package main

import (
	"bufio"
	"fmt"
	"os"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		hash, err := bcrypt.GenerateFromPassword(lines.Bytes(), bcrypt.DefaultCost)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hashpassword:", err)
			os.Exit(1)
		}
		fmt.Println(string(hash))
	}
	if err := lines.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "hashpassword:", err)
		os.Exit(1)
	}
}
