package brain

import (
	"strings"
)

// optiontable.go reads alternatives laid out as a markdown table, one row per alternative and columns for
// their trade-offs, as agents do when there are several criteria to compare.

var (
	// A row of a table: a markdown table's, or a row of a box that a CLI draws around a prompt (box-drawing side
	// borders), whose rows are read together like a table's.
	tableRowRe       = lazyRE(`^\s*(?:\|.*\||[│┃].*[│┃])\s*$`)
	tableSeparatorRe = lazyRE(`^\s*\|?(?:\s*:?-{2,}:?\s*\|)+\s*:?-{0,}:?\s*\|?\s*$`)
	// A cell that only numbers the row ("1", "#2", "3."): the row's name is in another column.
	rowNumberRe = lazyRE(`^(?:#\s*)?\d{1,2}\.?$|^#$|^(?i:no\.?)$`)
)

// tableOptions returns the alternatives in the first markdown table of text with the offset of its header:
// per row the cell that names the alternative, which is the first column that is not a row number. A table
// needs its separator row ("|---|---|") and at least one body row.
func tableOptions(text string) (int, []choice) {
	lines := strings.SplitAfter(text, "\n")
	offset := 0
	for i := 0; i+1 < len(lines); i++ {
		if !tableRowRe.MatchString(strings.TrimRight(lines[i], "\r\n")) || !tableSeparatorRe.MatchString(strings.TrimRight(lines[i+1], "\r\n")) {
			offset += len(lines[i])
			continue
		}
		header := tableCells(lines[i])
		var rows [][]string
		for _, l := range lines[i+2:] {
			if !tableRowRe.MatchString(strings.TrimRight(l, "\r\n")) {
				break
			}
			rows = append(rows, tableCells(l))
		}
		return offset, nameColumn(header, rows)
	}
	return 0, nil
}

// nameColumn picks, from each row, the cell of the first column that names things rather than numbering
// them, and cleans it as an option label.
func nameColumn(header []string, rows [][]string) []choice {
	if len(rows) == 0 {
		return nil
	}
	col := -1
	for c := range header {
		if rowNumberRe.MatchString(header[c]) && header[c] != "" {
			continue
		}
		numbers := true
		for _, r := range rows {
			if c >= len(r) || !rowNumberRe.MatchString(r[c]) {
				numbers = false
				break
			}
		}
		if !numbers {
			col = c
			break
		}
	}
	if col < 0 {
		return nil
	}
	var opts []choice
	for _, r := range rows {
		if col >= len(r) {
			continue
		}
		if o := cleanOption(r[col]); o.label != "" {
			opts = append(opts, o)
		}
	}
	return opts
}

// tableCells splits a row into its trimmed cells; "\|" is a pipe inside a cell.
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	const escapedPipe = "\x00"
	row = strings.ReplaceAll(row, `\|`, escapedPipe)
	cells := strings.Split(row, "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(c, escapedPipe, "|"))
	}
	return cells
}
