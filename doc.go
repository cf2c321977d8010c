// Package vibebrowser is the module root; it holds only repository-wide tests such as the package-doc check.
package vibebrowser
