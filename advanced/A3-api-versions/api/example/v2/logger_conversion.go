package v2

// Hub marks v2 as the hub of Logger's versions: every other version
// converts to and from v2 (../v1/logger_conversion.go), and v2 itself needs
// no conversion code. controller-runtime's conversion webhook looks for this
// method (conversion.Hub).
func (*Logger) Hub() {}
