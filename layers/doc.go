// Package layers holds no code: its test keeps the packages of the module
// layered as DESIGN.md draws them. Each package has a rank; a package may
// import only packages of a lower rank, the client side (the mount and
// the gateway client) links no storage, and the test fails when either
// rule breaks, naming the import.
package layers
