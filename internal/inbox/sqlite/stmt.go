package sqlite

import "strconv"

// eventsByID reads the events whose ids idList lists, in id order. The
// ids go as one JSON array, so the statement's text is the same for any
// number of them and is prepared once.
const eventsByID = `SELECT ` + columns + ` FROM events WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`

// idList is ids as a JSON array.
func idList(ids []int64) string {
	b := make([]byte, 0, 2+8*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}
